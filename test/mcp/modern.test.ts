import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, jsonOf, rawPost } from './support/mcp.js';

/*
 * The 2026-07-28 revision beside the 2025 eras on one endpoint: the SDK v2 client negotiating
 * by server/discover, the wire answers the revision defines, and write approvals as
 * input-required results (MRTR) that cannot be forged, moved or replayed.
 */

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'svc-modern-test', version: '1.0.0' },
};
const ELICITING = { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };

let nextId = 100;

/** A 2026-07-28 request as a conforming client sends it: `_meta` envelope plus the routing headers. */
function modernPost(url: string, apiKey: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const name: Record<string, string> = method === 'tools/call' ? { 'mcp-name': String(params.name) } : {};
  const body = { jsonrpc: '2.0', id: nextId++, method, params: { _meta: ENVELOPE, ...params } };
  return rawPost(url, body, { 'x-api-key': apiKey, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...name, ...headers });
}

describe.each(backends())('MCP 2026-07-28 beside the 2025 eras [%s]', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(() => s.close());

  const admin = () => s.demo.apiKeys.admin;

  /** The official SDK v2 client; `auto` probes with server/discover and falls back to initialize. */
  async function connectV2(options: { mode?: 'auto' | 'legacy'; approve?: (message: string) => { action: 'accept' | 'decline'; content?: { approve: boolean } } } = {}) {
    const client = new Client(
      { name: 'svc-v2-test', version: '1.0.0' },
      { capabilities: options.approve ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode: options.mode ?? 'auto' } },
    );
    const asked: string[] = [];
    const approve = options.approve;
    if (approve) {
      client.setRequestHandler('elicitation/create', (request) => {
        const message = String((request.params as { message: string }).message);
        asked.push(message);
        return approve(message);
      });
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { 'x-api-key': admin() } } }));
    return { client, asked };
  }

  async function teamCount(name: string): Promise<number> {
    const response = await modernPost(s.mcpUrl, admin(), 'tools/call', { name: 'list_teams', arguments: { companyId: 'co_acme', query: name } });
    const result = (await jsonOf(response)).result;
    return (result.structuredContent.teams as { name: string }[]).filter((team) => team.name === name).length;
  }

  describe('the SDK v2 client', () => {
    it('negotiates 2026-07-28 by server/discover and calls a tool without a session', async () => {
      const { client } = await connectV2();
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect(client.getDiscoverResult()?.supportedVersions).toEqual([MODERN]);
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(27);
      const whoami = await client.callTool({ name: 'whoami', arguments: {} });
      expect((whoami.structuredContent as { user: { email: string } }).user.email).toBe(s.demo.emails.admin);
      await client.close();
    });

    it('still gets the 2025-11-25 session when it does not negotiate', async () => {
      const { client } = await connectV2({ mode: 'legacy' });
      expect(client.getProtocolEra()).toBe('legacy');
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      expect((await client.listTools()).tools).toHaveLength(27);
      await client.close();
    });

    it('asks approval of a write as an input-required result and runs it once when approved', async () => {
      const { client, asked } = await connectV2({ approve: () => ({ action: 'accept', content: { approve: true } }) });
      const result = await client.callTool({ name: 'create_team', arguments: { companyId: 'co_acme', name: 'Modern Approved' } });
      expect(result.isError ?? false).toBe(false);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('create_team');
      expect(await teamCount('Modern Approved')).toBe(1);
      await client.close();
    });

    it.each([
      ['declined', { action: 'decline' as const }],
      ['unchecked', { action: 'accept' as const, content: { approve: false } }],
    ])('does nothing when the user %s', async (_how, answer) => {
      const { client } = await connectV2({ approve: () => answer });
      const name = `Modern ${_how}`;
      const result = await client.callTool({ name: 'create_team', arguments: { companyId: 'co_acme', name } });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain('approval_declined');
      expect(await teamCount(name)).toBe(0);
      await client.close();
    });
  });

  describe('the wire', () => {
    it('answers server/discover with versions, capabilities, identity and cache hints', async () => {
      const response = await modernPost(s.mcpUrl, admin(), 'server/discover');
      expect(response.status).toBe(200);
      const { result } = await jsonOf(response);
      expect(result).toMatchObject({
        resultType: 'complete',
        supportedVersions: [MODERN],
        capabilities: { tools: { listChanged: false } },
        ttlMs: 3_600_000,
        cacheScope: 'public',
      });
      expect(result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'device-lifecycle-service' });
      expect(result._meta['io.modelcontextprotocol/serverInfo'].icons[0].src).toMatch(/\/icons\/server\.png$/);
    });

    it('lists tools in a fixed order with all four hints, cacheable privately (the list marks what this credential may call)', async () => {
      const lists = await Promise.all([admin(), admin()].map(async (key) => (await jsonOf(await modernPost(s.mcpUrl, key, 'tools/list'))).result));
      expect(lists[0].tools.map((t: { name: string }) => t.name)).toEqual(lists[1].tools.map((t: { name: string }) => t.name));
      expect(lists[0]).toMatchObject({ resultType: 'complete', ttlMs: 300_000, cacheScope: 'private' });
      for (const tool of lists[0].tools) {
        expect(Object.keys(tool.annotations).sort(), tool.name).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint', 'title']);
      }
    });

    it('answers an unsupported version with -32022, the supported list, the version as sent and the request id', async () => {
      const body = { jsonrpc: '2.0', id: 'v-1', method: 'server/discover', params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } };
      const response = await rawPost(s.mcpUrl, body, { 'x-api-key': admin(), 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'server/discover' });
      expect(response.status).toBe(400);
      expect(await jsonOf(response)).toEqual({
        jsonrpc: '2.0',
        id: 'v-1',
        error: { code: -32022, message: expect.any(String), data: { supported: [MODERN], requested: '2099-01-01' } },
      });
    });

    it('keeps the 2025 answer for a client without the envelope naming a date it does not know, so it falls back to initialize', async () => {
      const response = await rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }, { 'x-api-key': admin(), 'mcp-protocol-version': '2024-10-07' });
      expect(response.status).toBe(400);
      const body = await jsonOf(response);
      expect(body.error.code).toBe(-32000);
      expect(body.error.message).toContain(`supported: ${MODERN}, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`);
    });

    it.each([
      ['a header version other than the envelope', { 'mcp-protocol-version': '2025-11-25' }],
      ['no Mcp-Method header', { 'mcp-method': '' }],
      ['an Mcp-Method other than the body', { 'mcp-method': 'tools/list' }],
      ['an Mcp-Name other than the tool', { 'mcp-name': 'delete_employee' }],
    ])('refuses %s with 400 -32020 and the request id', async (_case, headers) => {
      const id = nextId;
      const response = await modernPost(s.mcpUrl, admin(), 'tools/call', { name: 'whoami', arguments: {} }, headers);
      expect(response.status).toBe(400);
      const body = await jsonOf(response);
      expect(body.error.code).toBe(-32020);
      expect(body.id).toBe(id);
    });

    it('refuses a 2026-07-28 request without its envelope with 400 -32602', async () => {
      const response = await rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, {
        'x-api-key': admin(),
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/list',
      });
      expect(response.status).toBe(400);
      expect(await jsonOf(response)).toMatchObject({ id: 9, error: { code: -32602 } });
    });

    it.each(['initialize', 'ping', 'logging/setLevel', 'resources/list', 'no/such'])('answers %s with 404 -32601 in this revision', async (method) => {
      const response = await modernPost(s.mcpUrl, admin(), method);
      expect(response.status).toBe(404);
      expect((await jsonOf(response)).error.code).toBe(-32601);
    });

    it.each(['GET', 'DELETE'])('answers %s with 405: this revision has no sessions or streams to open', async (method) => {
      const response = await fetch(s.mcpUrl, { method, headers: { 'x-api-key': admin(), 'mcp-protocol-version': MODERN } });
      expect(response.status).toBe(405);
    });

    it('authenticates before the revision is even looked at', async () => {
      const response = await modernPost(s.mcpUrl, 'svc_live_not-a-key', 'server/discover');
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('resource_metadata=');
    });

    it('answers an unknown tool as invalid params, and a refused capability as a tool error, as the 2025 eras do', async () => {
      const unknown = await jsonOf(await modernPost(s.mcpUrl, admin(), 'tools/call', { name: 'no_such_tool', arguments: {} }));
      expect(unknown.error.code).toBe(-32602);
      const denied = await jsonOf(await modernPost(s.mcpUrl, s.demo.apiKeys.employee, 'tools/call', { name: 'create_team', arguments: { companyId: 'co_acme', name: 'X' } }));
      expect(denied.result.isError).toBe(true);
      expect(denied.result.content[0].text).toContain('missing_capability');
    });

    it('leaves a 2025 session alone: initialize still opens one', async () => {
      const response = await rawPost(s.mcpUrl, initializeBody('2025-11-25'), { 'x-api-key': admin() });
      expect(response.status).toBe(200);
      expect(response.headers.get('mcp-session-id')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });
  });

  describe('write approvals (input-required results)', () => {
    const createTeam = (name: string) => ({ name: 'create_team', arguments: { companyId: 'co_acme', name } });

    /** The first round: the question and the state to echo. */
    async function ask(name: string, apiKey = admin()) {
      const response = await modernPost(s.mcpUrl, apiKey, 'tools/call', { ...createTeam(name), _meta: ELICITING });
      const { result } = await jsonOf(response);
      expect(result.resultType).toBe('input_required');
      expect(result.inputRequests.approval.method).toBe('elicitation/create');
      return result.requestState as string;
    }

    /** The retry with the user's answer, on a new id. */
    async function answer(name: string, requestState: string, action = 'accept', options: { apiKey?: string; args?: object } = {}) {
      const params = {
        name: 'create_team',
        arguments: options.args ?? createTeam(name).arguments,
        _meta: ELICITING,
        inputResponses: { approval: { action, ...(action === 'accept' ? { content: { approve: true } } : {}) } },
        requestState,
      };
      return jsonOf(await modernPost(s.mcpUrl, options.apiKey ?? admin(), 'tools/call', params));
    }

    it('runs the write once: a replayed approval is refused', async () => {
      const state = await ask('Replay Once');
      expect((await answer('Replay Once', state)).result.isError ?? false).toBe(false);
      const replay = await answer('Replay Once', state);
      expect(replay.result.isError).toBe(true);
      expect(replay.result.content[0].text).toContain('approval_used');
      expect(await teamCount('Replay Once')).toBe(1);
    });

    it('uses up a declined approval too', async () => {
      const state = await ask('Declined Then Accepted');
      expect((await answer('Declined Then Accepted', state, 'decline')).result.content[0].text).toContain('approval_declined');
      expect((await answer('Declined Then Accepted', state)).result.content[0].text).toContain('approval_used');
      expect(await teamCount('Declined Then Accepted')).toBe(0);
    });

    it('refuses a state moved to other arguments', async () => {
      const state = await ask('Original Arguments');
      const moved = await answer('Other Arguments', state, 'accept', { args: createTeam('Other Arguments').arguments });
      expect(moved.error.code).toBe(-32602);
      expect(await teamCount('Other Arguments')).toBe(0);
    });

    it('refuses a state presented by another principal', async () => {
      const state = await ask('Someone Else');
      const stolen = await answer('Someone Else', state, 'accept', { apiKey: s.demo.apiKeys.manager });
      expect(stolen.error).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
      expect(await teamCount('Someone Else')).toBe(0);
    });

    it('refuses a tampered state', async () => {
      const state = await ask('Tampered');
      const [version, body, mac] = state.split('.');
      const forged = `${version}.${body}.${mac!.slice(0, -2)}AA`;
      expect((await answer('Tampered', forged)).error.code).toBe(-32602);
      expect(await teamCount('Tampered')).toBe(0);
    });

    it('refuses a state answered after five minutes', async () => {
      const state = await ask('Too Late');
      const now = Date.now();
      const clock = vi.spyOn(Date, 'now').mockReturnValue(now + 5 * 60 * 1000 + 1000);
      try {
        expect((await answer('Too Late', state)).error.code).toBe(-32602);
      } finally {
        clock.mockRestore();
      }
      expect(await teamCount('Too Late')).toBe(0);
    });

    it('asks again when the retry carries the state but no answer', async () => {
      const state = await ask('Asked Again');
      const params = { ...createTeam('Asked Again'), _meta: ELICITING, requestState: state };
      const again = (await jsonOf(await modernPost(s.mcpUrl, admin(), 'tools/call', params))).result;
      expect(again.resultType).toBe('input_required');
      expect(await teamCount('Asked Again')).toBe(0);
    });

    it('runs a write without asking when the client cannot show a form, as the 2025 eras do', async () => {
      const result = (await jsonOf(await modernPost(s.mcpUrl, admin(), 'tools/call', createTeam('No Form')))).result;
      expect(result.resultType).toBe('complete');
      expect(result.isError ?? false).toBe(false);
      expect(await teamCount('No Form')).toBe(1);
    });
  });
});
