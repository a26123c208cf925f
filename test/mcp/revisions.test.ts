import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MCP_BATCH_MAX_MESSAGES, MCP_BODY_LIMIT_BYTES, MCP_IN_FLIGHT_PER_CREDENTIAL } from '../../src/mcp/limits.js';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, jsonOf, MCP_HEADERS, rawPost } from './support/mcp.js';

/*
 * The revisions clients in the field still initialize with: 2025-03-26 and 2024-11-05, each served
 * in its own version to a client that speaks only it, and 2025-03-26's JSON-RPC batches served
 * within the endpoint's limits (messages per batch, body size, places in flight).
 */

const OLD_REVISIONS = ['2025-03-26', '2024-11-05'] as const;

describe.each(backends())('MCP revisions in the field [%s]', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(() => s.close());

  const admin = () => s.demo.apiKeys.admin;
  const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const createTeam = (id: number, name: string) => call(id, 'create_team', { companyId: s.demo.companies.acme, name });

  async function teams(name: string): Promise<number> {
    return (await s.core.db.query(sql`SELECT id FROM teams WHERE name = ${name}`)).length;
  }

  /** A raw session as a client of the revision opens it: no MCP-Protocol-Version header (2025-06-18 brought it). */
  async function open(version: string, capabilities: Record<string, unknown> = {}): Promise<Record<string, string>> {
    const response = await rawPost(s.mcpUrl, initializeBody(version, capabilities), { 'x-api-key': admin() });
    expect(response.status).toBe(200);
    expect((await jsonOf(response)).result.protocolVersion).toBe(version);
    return { 'x-api-key': admin(), 'mcp-session-id': response.headers.get('mcp-session-id')! };
  }

  describe.each(OLD_REVISIONS)('a client speaking only %s', (version) => {
    it('negotiates its version, lists the tools and calls one', async () => {
      // SDK v2's client offers the first of its versions and disconnects on any answer not among them.
      const client = new Client({ name: 'svc-revision-test', version: '1.0.0' }, { supportedProtocolVersions: [version], versionNegotiation: { mode: 'legacy' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { 'x-api-key': admin() } } }));
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe(version);
        expect((await client.listTools()).tools).toHaveLength(27);
        const whoami = await client.callTool({ name: 'whoami', arguments: {} });
        expect((whoami.structuredContent as { user: { email: string } }).user.email).toBe(s.demo.emails.admin);
      } finally {
        await client.close();
      }
    });

    it('runs a write without asking: the revision has no elicitation, whatever the client declares', async () => {
      const headers = await open(version, { elicitation: {} });
      const name = `Unasked ${version} ${backend}`;
      const response = await rawPost(s.mcpUrl, createTeam(2, name), headers);
      expect(response.headers.get('content-type')).toContain('application/json');
      expect((await jsonOf(response)).result.isError ?? false).toBe(false);
      expect(await teams(name)).toBe(1);
    });
  });

  it('2024-11-05 has no batches: one is refused with 400 -32600 naming the revision, and none of it runs', async () => {
    const headers = await open('2024-11-05');
    const name = `Batched 2024-11-05 ${backend}`;
    const response = await rawPost(s.mcpUrl, [createTeam(2, name), call(3, 'whoami')], headers);
    expect(response.status).toBe(400);
    expect((await jsonOf(response)).error).toEqual({ code: -32600, message: 'JSON-RPC batches are not part of MCP 2024-11-05: send one message per POST', data: { code: 'batch_not_supported' } });
    expect(await teams(name)).toBe(0);
  });

  describe('2025-03-26 batches', () => {
    it('answers the requests of a batch in one array, in order, and accepts its notifications', async () => {
      const headers = await open('2025-03-26');
      const name = `Batched 2025-03-26 ${backend}`;
      const batch = [
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        call(2, 'whoami'),
        { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} },
        createTeam(4, name),
        call(5, 'no_such_tool'),
        { jsonrpc: '2.0', id: 6, method: 'ping' },
      ];
      const response = await rawPost(s.mcpUrl, batch, headers);
      expect(response.status).toBe(200);
      const answers = await jsonOf(response);
      expect(answers.map((answer: { id: number }) => answer.id)).toEqual([2, 3, 4, 5, 6]);
      expect(answers[0].result.structuredContent.user.email).toBe(s.demo.emails.admin);
      expect(answers[1].result.tools).toHaveLength(27);
      expect(answers[2].result.isError ?? false).toBe(false);
      expect(answers[3].error.code).toBe(-32602);
      expect(answers[4]).toEqual({ jsonrpc: '2.0', id: 6, result: {} });
      expect(await teams(name)).toBe(1);
    });

    it(`takes ${MCP_BATCH_MAX_MESSAGES} messages; one more is refused with 400 -32600 batch_too_large, and none of it runs`, async () => {
      const headers = await open('2025-03-26');
      const full = await rawPost(s.mcpUrl, Array.from({ length: MCP_BATCH_MAX_MESSAGES }, (_, i) => call(i, 'whoami')), headers);
      expect(full.status).toBe(200);
      expect(await jsonOf(full)).toHaveLength(MCP_BATCH_MAX_MESSAGES);

      const name = `Over the batch limit ${backend}`;
      const over = await rawPost(s.mcpUrl, Array.from({ length: MCP_BATCH_MAX_MESSAGES + 1 }, (_, i) => createTeam(i, `${name} ${i}`)), headers);
      expect(over.status).toBe(400);
      expect(await jsonOf(over)).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: `A JSON-RPC batch may hold at most ${MCP_BATCH_MAX_MESSAGES} messages; this one holds ${MCP_BATCH_MAX_MESSAGES + 1}: send the rest in another POST`,
          data: { code: 'batch_too_large' },
        },
      });
      expect(await teams(`${name} 0`)).toBe(0);
    });

    it('refuses a batch over the body limit with 413 before reading it', async () => {
      const headers = await open('2025-03-26');
      const padded = { ...call(1, 'whoami'), params: { name: 'whoami', arguments: {}, _meta: { padding: 'x'.repeat(MCP_BODY_LIMIT_BYTES) } } };
      const response = await rawPost(s.mcpUrl, [padded, call(2, 'whoami')], headers);
      expect(response.status).toBe(413);
      expect((await jsonOf(response)).error.code).toBe(-32700);
    });

    it('answers an element that is no message, or is initialize, with its own error; the rest runs', async () => {
      const headers = await open('2025-03-26');
      const response = await rawPost(s.mcpUrl, [42, initializeBody('2025-03-26'), call(3, 'whoami')], headers);
      expect(response.status).toBe(200);
      expect(await jsonOf(response)).toEqual([
        { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Each element of a batch must be a JSON-RPC 2.0 message' } },
        { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'initialize may not be part of a JSON-RPC batch' } },
        expect.objectContaining({ id: 3, result: expect.objectContaining({ structuredContent: expect.anything() }) }),
      ]);
    });

    it('refuses an empty batch, and accepts one of notifications alone with 202', async () => {
      const headers = await open('2025-03-26');
      const empty = await rawPost(s.mcpUrl, [], headers);
      expect(empty.status).toBe(400);
      expect((await jsonOf(empty)).error).toEqual({ code: -32600, message: 'A JSON-RPC batch must hold at least one message', data: { code: 'empty_batch' } });
      const notifications = await rawPost(s.mcpUrl, [{ jsonrpc: '2.0', method: 'notifications/initialized' }], headers);
      expect(notifications.status).toBe(202);
    });

    it(`counts a batch as one of the credential's ${MCP_IN_FLIGHT_PER_CREDENTIAL} places in flight: past them a batch is refused with 429`, async () => {
      const headers = await open('2025-03-26');
      const inFlight = async () => (await s.core.metrics.registry.getSingleMetric('svc_mcp_requests_in_flight')!.get()).values[0]?.value;
      const body = JSON.stringify([call(1, 'whoami'), call(2, 'whoami')]);
      // Batches whose bodies are still arriving: each holds its place until answered.
      const held = Array.from({ length: MCP_IN_FLIGHT_PER_CREDENTIAL }, () => {
        const request = httpRequest(s.mcpUrl, { method: 'POST', headers: { ...MCP_HEADERS, 'content-length': Buffer.byteLength(body), ...headers } });
        const answer = new Promise<IncomingMessage>((resolve, reject) => request.on('response', resolve).on('error', reject));
        request.write(body.slice(0, 10));
        return { request, answer };
      });
      await vi.waitFor(async () => expect(await inFlight()).toBe(MCP_IN_FLIGHT_PER_CREDENTIAL), { timeout: 20_000, interval: 20 });

      const refused = await rawPost(s.mcpUrl, JSON.parse(body), headers);
      expect(refused.status).toBe(429);
      expect((await jsonOf(refused)).error).toMatchObject({ code: -32000, data: { code: 'rate_limited' } });

      for (const { request } of held) request.end(body.slice(10));
      for (const { answer } of held) expect((await answer).statusCode).toBe(200);
      await vi.waitFor(async () => expect(await inFlight()).toBe(0), { timeout: 20_000, interval: 20 });
      expect((await rawPost(s.mcpUrl, JSON.parse(body), headers)).status).toBe(200);
    });
  });
});
