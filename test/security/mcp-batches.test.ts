import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, jsonOf, rawPost } from '../mcp/support/mcp.js';

/*
 * One JSON-RPC batch of thousands of tool calls held the whole instance for seconds. Batching is no
 * part of the 2025 revisions served (2025-11-25, 2025-06-18): a batch is refused as an Invalid
 * Request before any of its calls runs, and one message per POST is served as before.
 */

describe.each(backends())('a JSON-RPC batch is refused on the 2025 revisions [%s]', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(() => s.close());

  const employee = () => s.demo.apiKeys.employee;
  const admin = () => s.demo.apiKeys.admin;
  const whoami = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

  async function open(apiKey: string, version: string): Promise<Record<string, string>> {
    const response = await rawPost(s.mcpUrl, initializeBody(version), { 'x-api-key': apiKey });
    expect(response.status).toBe(200);
    return { 'x-api-key': apiKey, 'mcp-session-id': response.headers.get('mcp-session-id')!, 'mcp-protocol-version': version };
  }

  async function teams(name: string): Promise<number> {
    return (await s.core.db.query(sql`SELECT id FROM teams WHERE name = ${name}`)).length;
  }

  it.each(['2025-11-25', '2025-06-18'])('%s: refuses a batch of calls with 400 -32600 naming the revision; the session still serves one message', async (version) => {
    const headers = await open(employee(), version);
    const response = await rawPost(s.mcpUrl, Array.from({ length: 500 }, (_, i) => whoami(i)), headers);
    expect(response.status).toBe(400);
    expect(await jsonOf(response)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: `JSON-RPC batches are not part of MCP ${version}: send one message per POST`, data: { code: 'batch_not_supported' } },
    });
    const single = await rawPost(s.mcpUrl, whoami(1), headers);
    expect(single.status).toBe(200);
    expect((await jsonOf(single)).result.structuredContent.user.email).toBe(s.demo.emails.employee);
  });

  it('runs none of the calls in a refused batch, even a batch of one write', async () => {
    const headers = await open(admin(), '2025-11-25');
    const name = `Batched ${backend}`;
    const create = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'create_team', arguments: { companyId: s.demo.companies.acme, name } } };
    const response = await rawPost(s.mcpUrl, [create], headers);
    expect(response.status).toBe(400);
    expect((await jsonOf(response)).error.code).toBe(-32600);
    expect(await teams(name)).toBe(0);
  });

  it('refuses a batch whose session is named only by its id (no version header): the session’s revision decides', async () => {
    const { 'mcp-protocol-version': _version, ...headers } = await open(employee(), '2025-06-18');
    const response = await rawPost(s.mcpUrl, [whoami(1), whoami(2)], headers);
    expect(response.status).toBe(400);
    expect((await jsonOf(response)).error).toMatchObject({ code: -32600, message: expect.stringContaining('2025-06-18') });
  });

  it('refuses batched notifications and replies too', async () => {
    const headers = await open(employee(), '2025-11-25');
    const response = await rawPost(s.mcpUrl, [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 9, result: {} }], headers);
    expect(response.status).toBe(400);
    expect((await jsonOf(response)).error.code).toBe(-32600);
  });

  it('opens no session from a batch holding initialize', async () => {
    const response = await rawPost(s.mcpUrl, [initializeBody('2025-11-25'), whoami(2)], { 'x-api-key': employee() });
    expect(response.status).toBe(400);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect((await jsonOf(response)).error.message).toMatch(/Mcp-Session-Id header is required/);
  });
});
