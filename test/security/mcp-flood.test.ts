import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MCP_BODY_LIMIT_BYTES, MCP_IN_FLIGHT_PER_CREDENTIAL } from '../../src/mcp/limits.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { connect, data, initializeBody, jsonOf, rawPost } from '../mcp/support/mcp.js';

/*
 * One key flooding /mcp with large POSTs held every other caller of the instance (bench/mcp-flood.ts):
 * the bodies were read and parsed whatever became of them. A body over the endpoint's limit is now
 * refused before it is read, and one credential's requests in flight are bounded before their bodies
 * are parsed; another credential is served meanwhile.
 */

describe.each(backends())('one credential cannot hold the MCP endpoint [%s]', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(() => s.close());

  const whoami = (id: number, meta: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: meta } });

  async function open(apiKey: string, capabilities: Record<string, unknown> = {}): Promise<Record<string, string>> {
    const response = await rawPost(s.mcpUrl, initializeBody('2025-11-25', capabilities), { 'x-api-key': apiKey });
    expect(response.status).toBe(200);
    return { 'x-api-key': apiKey, 'mcp-session-id': response.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  }

  it('refuses a body over the limit with 413 and a JSON-RPC parse error naming the limit; one under it is served', async () => {
    const headers = await open(s.demo.apiKeys.employee);
    const over = await rawPost(s.mcpUrl, whoami(1, { padding: 'x'.repeat(MCP_BODY_LIMIT_BYTES) }), headers);
    expect(over.status).toBe(413);
    expect(await jsonOf(over)).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32700, message: `The body could not be read as JSON-RPC: it is larger than the MCP endpoint's limit of ${MCP_BODY_LIMIT_BYTES} bytes` },
    });
    const under = await rawPost(s.mcpUrl, whoami(2, { padding: 'x'.repeat(MCP_BODY_LIMIT_BYTES - 1024) }), headers);
    expect(under.status).toBe(200);
  });

  it(`answers a credential's request past ${MCP_IN_FLIGHT_PER_CREDENTIAL} in flight with 429 before reading it, and serves another credential meanwhile`, async () => {
    const flooder = await open(s.demo.apiKeys.employee);
    const other = await open(s.demo.apiKeys.admin);
    const inFlight = async () => (await s.core.metrics.registry.getSingleMetric('svc_mcp_requests_in_flight')!.get()).values[0]?.value;
    const body = JSON.stringify(whoami(7));
    // Requests whose bodies are still arriving: each holds its place until answered.
    const held: { request: ClientRequest; answer: Promise<IncomingMessage> }[] = [];
    for (let i = 0; i < MCP_IN_FLIGHT_PER_CREDENTIAL; i++) {
      const request = httpRequest(s.mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body), ...flooder },
      });
      const answer = new Promise<IncomingMessage>((resolve, reject) => request.on('response', resolve).on('error', reject));
      request.write(body.slice(0, 10));
      held.push({ request, answer });
    }
    // The server has taken every place once its gauge says so; until then there is nothing to assert.
    await vi.waitFor(async () => expect(await inFlight()).toBe(MCP_IN_FLIGHT_PER_CREDENTIAL), { timeout: 20_000, interval: 20 });

    const refused = await rawPost(s.mcpUrl, whoami(8), flooder);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await jsonOf(refused)).error).toMatchObject({ code: -32000, data: { code: 'rate_limited' } });
    // Places are counted per authenticated credential: a key spelled otherwise, or any key that does
    // not authenticate, is refused before its body is read (the body here never arrives in full).
    for (const key of [`${flooder['x-api-key']}\u00a0`, 'svc_sk_abcdefgh_not-a-real-secret', 'lk_unknown']) {
      const early = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(s.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': 1000, ...flooder, 'x-api-key': key } });
        request.on('response', (response) => {
          resolve(response.statusCode!);
          request.destroy();
        }).on('error', reject);
        request.write('{"jsonrpc"');
      });
      expect(early, key).toBe(401);
    }
    const served = await rawPost(s.mcpUrl, whoami(9), other);
    expect(served.status).toBe(200);

    // The held requests finish and are answered; their places are free again.
    for (const { request } of held) request.end(body.slice(10));
    for (const { answer } of held) expect((await answer).statusCode).toBe(200);
    await vi.waitFor(async () => expect(await inFlight()).toBe(0), { timeout: 20_000, interval: 20 });
    expect((await rawPost(s.mcpUrl, whoami(10), flooder)).status).toBe(200);
  });

  it('gives back the place of a client gone while its request was authenticated', async () => {
    const inFlight = async () => (await s.core.metrics.registry.getSingleMetric('svc_mcp_requests_in_flight')!.get()).values[0]?.value ?? 0;
    // Authentication waits until the client's connection is gone on the server's side too.
    const serverSockets: Socket[] = [];
    const onConnection = (socket: Socket) => serverSockets.push(socket);
    s.app.server.on('connection', onConnection);
    let authenticating!: () => void;
    const reached = new Promise<void>((resolve) => (authenticating = resolve));
    let letThrough!: () => void;
    const gate = new Promise<void>((resolve) => (letThrough = resolve));
    const auth = s.core.auth;
    const authenticate = auth.authenticate.bind(auth);
    let authenticated!: () => void;
    const admitted = new Promise<void>((resolve) => (authenticated = resolve));
    auth.authenticate = async (...args) => {
      authenticating();
      await gate;
      const principal = await authenticate(...args);
      authenticated();
      return principal;
    };
    try {
      const request = httpRequest(s.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': 1000, 'x-api-key': s.demo.apiKeys.employee } });
      request.on('error', () => undefined);
      request.write('{"jsonrpc"');
      await reached;
      const socket = serverSockets.at(-1)!;
      const closed = new Promise((resolve) => socket.once('close', resolve));
      request.destroy();
      await closed;
      letThrough();
      await admitted;
      // The admission's place is taken in the same turn as authentication ends: one turn later it is settled.
      await new Promise((resolve) => setImmediate(resolve));
      expect(await inFlight()).toBe(0);
    } finally {
      auth.authenticate = authenticate;
      s.app.server.off('connection', onConnection);
    }
  });

  it('lets writes waiting on the user’s approval hold no place: the answers come back, every call completes', async () => {
    const calls = MCP_IN_FLIGHT_PER_CREDENTIAL;
    let waiting = 0;
    let everyoneAsked: () => void = () => undefined;
    const allAsked = new Promise<void>((resolve) => (everyoneAsked = resolve));
    // Each approval is answered only once every call is waiting on one, so their streams are all open together.
    const admin = await connect(s.mcpUrl, s.demo.apiKeys.admin, {
      elicit: async () => {
        if (++waiting === calls) everyoneAsked();
        await allAsked;
        return { action: 'accept' as const, content: { approve: true } };
      },
    });
    try {
      const names = Array.from({ length: calls }, (_, i) => `Parallel ${backend} ${i}`);
      const results = await Promise.all(names.map((name) => admin.client.callTool({ name: 'create_team', arguments: { companyId: s.demo.companies.acme, name } })));
      expect(results.map((result) => data(result).name)).toEqual(names);
      expect(admin.elicitations).toHaveLength(calls);
    } finally {
      await admin.close();
    }
  });

  it('answers a tool name that is not a string with a JSON-RPC error, on a session that can approve too', async () => {
    const headers = await open(s.demo.apiKeys.admin, { elicitation: { form: {} } });
    for (const name of [{ toString: 1 }, 7, null]) {
      const response = await rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name, arguments: {} } }, headers);
      expect(response.status, JSON.stringify(name)).toBe(200);
      expect((await jsonOf(response)).error).toEqual({ code: -32602, message: 'params.name must be a tool name (a string)' });
    }
  });
});
