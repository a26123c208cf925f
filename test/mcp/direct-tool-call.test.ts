import { Server as ServerV2 } from '@modelcontextprotocol/server';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server as ServerV1 } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { createMcpMetrics } from '../../src/mcp/metrics.js';
import { createMcpServer } from '../../src/mcp/server.js';
import { sql } from '../../src/store/sql.js';
import { initializeBody, jsonOf, rawPost } from './support/mcp.js';

/*
 * A plain tool call (known tool, nothing to ask the user) is answered without building an SDK
 * server, in both eras. What it answers must be what the SDK's server answers to the same call:
 * each case is sent once as is (answered directly: no SDK server connects) and once to the SDK's
 * server (in the 2025 eras the one the endpoint would build, over the SDK's in-memory transport; in
 * 2026-07-28 over HTTP, with an Mcp-Name header in its Base64 form, which only the SDK serves), and
 * the two answers are compared.
 */

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'svc-direct-test', version: '1.0.0' },
};

describe.each(backends())('tool calls answered directly equal the SDK server’s answers [%s]', (backend) => {
  let s: ListeningTestApp;
  let teamsOnlyKey: string;
  beforeAll(async () => {
    s = await startListeningApp(backend);
    teamsOnlyKey = await keyWith(s, 'admin', ['mcp:teams:read']);
  });
  afterAll(() => s.close());

  const cases = () => [
    { why: 'a read that succeeds', key: s.demo.apiKeys.admin, name: 'get_employee', arguments: { id: s.demo.employees.dana } },
    { why: 'a record that is not there', key: s.demo.apiKeys.admin, name: 'get_employee', arguments: { id: 'emp_missing' } },
    { why: 'arguments that fail validation', key: s.demo.apiKeys.admin, name: 'get_employee', arguments: { id: 7, extra: true } },
    { why: 'no arguments at all', key: s.demo.apiKeys.admin, name: 'whoami', arguments: undefined },
    { why: 'a capability the key lacks', key: teamsOnlyKey, name: 'get_employee', arguments: { id: s.demo.employees.dana } },
    { why: 'a list', key: s.demo.apiKeys.admin, name: 'list_teams', arguments: { companyId: s.demo.companies.acme } },
  ];

  /** The 2025 SDK server's answer to `call` for this key, as the endpoint builds the server for a session declaring no capabilities. */
  async function sdkServerAnswer(apiKey: string, call: JSONRPCRequest): Promise<unknown> {
    const principal = await s.core.auth.authenticate({ 'x-api-key': apiKey }, 'mcp');
    const ctx = { core: s.core, principal, requestId: 'direct-test', metrics: createMcpMetrics(s.core.metrics.registry), log: s.core.logger };
    const server = createMcpServer(ctx, {});
    const [client, serverSide] = InMemoryTransport.createLinkedPair();
    const answered = new Promise<JSONRPCMessage>((resolve) => (client.onmessage = resolve));
    await server.connect(serverSide);
    await client.send(call);
    const answer = await answered;
    await server.close();
    // As the endpoint writes it.
    return JSON.parse(JSON.stringify(answer));
  }

  /** The answer to `send`, and how many SDK servers connected while it ran. */
  async function serversBuilt(send: () => Promise<Response>): Promise<{ built: number; status: number; body: any }> {
    const v1 = vi.spyOn(ServerV1.prototype, 'connect');
    const v2 = vi.spyOn(ServerV2.prototype, 'connect');
    try {
      const response = await send();
      return { built: v1.mock.calls.length + v2.mock.calls.length, status: response.status, body: await jsonOf(response) };
    } finally {
      v1.mockRestore();
      v2.mockRestore();
    }
  }

  it.each(['2025-11-25', '2025-06-18'])('%s: each case, directly and through the SDK', async (version) => {
    for (const c of cases()) {
      const opened = await rawPost(s.mcpUrl, initializeBody(version), { 'x-api-key': c.key });
      const headers = { 'x-api-key': c.key, 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': version };
      const call = { jsonrpc: '2.0' as const, id: 7, method: 'tools/call', params: { name: c.name, arguments: c.arguments } };
      const direct = await serversBuilt(() => rawPost(s.mcpUrl, call, headers));
      expect(direct.status, c.why).toBe(200);
      expect(direct.built, c.why).toBe(0);
      expect(direct.body, c.why).toEqual(await sdkServerAnswer(c.key, call));
    }
  });

  it('2026-07-28: each case, directly and through the SDK', async () => {
    for (const c of cases()) {
      const call = { jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { _meta: ENVELOPE, name: c.name, arguments: c.arguments } };
      const headers = (mcpName: string) => ({ 'x-api-key': c.key, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': mcpName });
      const direct = await serversBuilt(() => rawPost(s.mcpUrl, call, headers(c.name)));
      const viaSdk = await serversBuilt(() => rawPost(s.mcpUrl, call, headers(`=?base64?${Buffer.from(c.name).toString('base64')}?=`)));
      expect([direct.status, viaSdk.status], c.why).toEqual([200, 200]);
      expect(direct.built, c.why).toBe(0);
      expect(viaSdk.built, c.why).toBe(1);
      expect(direct.body, c.why).toEqual(viaSdk.body);
    }
  });

  it('leaves to the SDK what it alone answers: unknown tools, odd params, a malformed envelope, approvals', async () => {
    const eliciting = { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
    const modern = (params: Record<string, unknown>, name: string) =>
      serversBuilt(() =>
        rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 1, method: 'tools/call', params }, { 'x-api-key': s.demo.apiKeys.admin, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name }),
      );
    const unknown = await modern({ _meta: ENVELOPE, name: 'no_such_tool', arguments: {} }, 'no_such_tool');
    expect(unknown.body.error).toMatchObject({ message: expect.stringContaining('no_such_tool') });
    expect(unknown.built).toBe(1);
    const odd = await modern({ _meta: ENVELOPE, name: 'get_employee', arguments: [1] }, 'get_employee');
    expect(odd.body.error).toBeDefined();
    // The SDK refuses an envelope without the client's capabilities before building a server; nothing runs.
    const { 'io.modelcontextprotocol/clientCapabilities': _dropped, ...withoutCapabilities } = ENVELOPE;
    const teamName = `Direct ${Date.now()}`;
    const malformed = await modern({ _meta: withoutCapabilities, name: 'create_team', arguments: { name: teamName, companyId: s.demo.companies.acme } }, 'create_team');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBeDefined();
    expect((await s.core.db.query(sql`SELECT id FROM teams WHERE name = ${teamName}`)).length).toBe(0);
    const write = await modern({ _meta: eliciting, name: 'create_team', arguments: { name: teamName, companyId: s.demo.companies.acme } }, 'create_team');
    expect(write.built).toBe(1);
    expect(write.body).toMatchObject({ result: { resultType: 'input_required' } });
  });
});
