import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { jsonOf, rawPost } from '../mcp/support/mcp.js';

/*
 * 2026-07-28 requests the endpoint misjudged: a body that is no request of the revision (an id that
 * is neither string nor number) answered as if it asked for a session, and an approval's retry that
 * declared no elicitation capability ran the write without using up the approval, so replaying it
 * repeated the write.
 */

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'svc-security-test', version: '1.0.0' },
};
const ELICITING = { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
const HEADERS = { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' };

describe.each(backends())('MCP 2026-07-28 request checks [%s]', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(() => s.close());

  const admin = () => s.demo.apiKeys.admin;
  const post = (body: unknown, name = 'whoami') => rawPost(s.mcpUrl, body, { 'x-api-key': admin(), ...HEADERS, 'mcp-name': name });
  const call = (params: Record<string, unknown>, id: unknown = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params });

  describe('a tools/call whose id is not a string or number is an Invalid Request', () => {
    it.each([
      ['a null id', null],
      ['an object id', { n: 1 }],
      ['an array id', [1]],
      ['a boolean id', true],
    ])('answers %s with 400 -32600, not a sessions refusal', async (_name, id) => {
      const response = await post(call({ name: 'whoami', arguments: {}, _meta: ENVELOPE }, id));
      expect(response.status).toBe(400);
      const body = await jsonOf(response);
      expect(body.error.code).toBe(-32600);
      expect(body.error.message).not.toMatch(/sessions/);
    });

    it('refuses a batch and a posted reply under the 2026-07-28 header the same way', async () => {
      for (const body of [[call({ name: 'whoami', arguments: {}, _meta: ENVELOPE })], { jsonrpc: '2.0', id: 4, result: {} }]) {
        const response = await post(body);
        expect(response.status).toBe(400);
        expect((await jsonOf(response)).error.code).toBe(-32600);
      }
    });

    it('still answers DELETE under the 2026-07-28 header with 405: the revision has no sessions', async () => {
      const response = await fetch(s.mcpUrl, { method: 'DELETE', headers: { 'x-api-key': admin(), 'mcp-protocol-version': MODERN } });
      expect(response.status).toBe(405);
    });
  });

  describe('an approval retry uses up its approval whatever capabilities it declares', () => {
    const createTeam = (name: string) => ({ name: 'create_team', arguments: { companyId: s.demo.companies.acme, name } });
    const teams = async (name: string) => (await s.core.db.query(sql`SELECT id FROM teams WHERE name = ${name}`)).length;

    /** The question's requestState, asked by a client that can show a form. */
    async function ask(name: string): Promise<string> {
      const { result } = await jsonOf(await post(call({ ...createTeam(name), _meta: ELICITING }), 'create_team'));
      expect(result.resultType).toBe('input_required');
      return result.requestState as string;
    }

    /** The approving retry, declaring no elicitation capability. */
    const retry = (name: string, requestState: string, extra: Record<string, unknown> = {}) =>
      post(
        call({ ...createTeam(name), _meta: ENVELOPE, requestState, inputResponses: { approval: { action: 'accept', content: { approve: true } } }, ...extra }, `retry-${name}`),
        'create_team',
      );

    it('runs the write once; a replay of the same retry is refused as approval_used', async () => {
      const name = `Replayed Without Form ${backend}`;
      const state = await ask(name);
      const first = (await jsonOf(await retry(name, state))).result;
      expect(first.isError ?? false).toBe(false);
      const replay = (await jsonOf(await retry(name, state))).result;
      expect(replay.isError).toBe(true);
      expect(JSON.parse(replay.content[0].text).error.code).toBe('approval_used');
      expect(await teams(name)).toBe(1);
    });

    it('verifies the state and binds it to the call: a tampered one or other arguments run nothing', async () => {
      const name = `Moved Without Form ${backend}`;
      const state = await ask(name);
      const tampered = await jsonOf(await retry(name, `${state.slice(0, -2)}AA`));
      expect(tampered.error.code).toBe(-32602);
      const moved = await jsonOf(await retry(`${name} elsewhere`, state));
      expect(moved.error.code).toBe(-32602);
      expect(await teams(name)).toBe(0);
      expect(await teams(`${name} elsewhere`)).toBe(0);
    });

    it('runs nothing on a state whose retry carries no answer: the approval is asked again, of a client that declared no form', async () => {
      const name = `Unanswered Without Form ${backend}`;
      const state = await ask(name);
      const answer = await jsonOf(await post(call({ ...createTeam(name), _meta: ENVELOPE, requestState: state }), 'create_team'));
      expect(answer.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } });
      expect(await teams(name)).toBe(0);
    });
  });
});
