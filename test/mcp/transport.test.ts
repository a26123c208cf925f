import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_USER_BOUND_MESSAGE } from '../../src/access/authenticate.js';
import { mintKeyForUser, revokeKey, setUserDisabled } from '../../src/domain/admin.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { connect, data, initializeBody, jsonOf, MCP_HEADERS, rawPost, textJson } from './support/mcp.js';

const LIST_TOOLS = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };

/** A JSON-RPC answer, whichever form the server chose (JSON or one SSE event). */
async function rpcBody(response: Response): Promise<any> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const line = text.split('\n').find((l) => l.startsWith('data: '));
  return JSON.parse(line!.slice('data: '.length));
}

describe.each(backends())('MCP transport: sessions, versions, headers, credentials [%s]', (backend) => {
  let s: ListeningTestApp;
  let clock = Date.now();
  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => new Date(clock) } });
  });
  afterAll(() => s.close());

  const key = () => s.demo.apiKeys.admin;

  /** Initializes over raw HTTP; returns the session id and the negotiated version. */
  async function initialize(apiKey = key(), protocolVersion = '2025-06-18') {
    const response = await rawPost(s.mcpUrl, initializeBody(protocolVersion), { 'x-api-key': apiKey });
    expect(response.status).toBe(200);
    const body = await rpcBody(response);
    return { sessionId: response.headers.get('mcp-session-id')!, version: body.result.protocolVersion as string };
  }

  describe('protocol versions', () => {
    it.each(['2025-06-18', '2025-11-25', '2025-03-26', '2024-11-05'])('negotiates %s at initialize and serves the session in it', async (version) => {
      const { sessionId, version: negotiated } = await initialize(key(), version);
      expect(negotiated).toBe(version);
      const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': sessionId, 'mcp-protocol-version': version });
      expect(response.status).toBe(200);
      expect((await rpcBody(response)).result.tools).toHaveLength(27);
    });

    it('offers its newest version to a client asking for one it does not speak', async () => {
      // 2024-10-07 is a version the SDK knows and this server does not serve.
      expect((await initialize(key(), '2024-10-07')).version).toBe('2025-11-25');
    });

    it('refuses an unsupported MCP-Protocol-Version header with 400', async () => {
      const { sessionId } = await initialize();
      for (const version of ['2024-10-07', '1999-01-01']) {
        const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': sessionId, 'mcp-protocol-version': version });
        expect(response.status, version).toBe(400);
        expect((await jsonOf(response)).error.message).toContain('Unsupported MCP-Protocol-Version');
      }
    });

    it('serves a session in the revision it negotiated, whichever served version the header names', async () => {
      // As SDK v1's transport does: clients in the field (conformance 0.1.16 among them) send 2025-03-26 in a 2025-11-25 session.
      const { sessionId } = await initialize(key(), '2025-11-25');
      const headers = { 'x-api-key': key(), 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-03-26' };
      const listed = await rawPost(s.mcpUrl, LIST_TOOLS, headers);
      expect(listed.status).toBe(200);
      expect((await rpcBody(listed)).result.tools).toHaveLength(27);
      // The header cannot lend the session a batch its revision does not have.
      const batch = await rawPost(s.mcpUrl, [LIST_TOOLS], headers);
      expect(batch.status).toBe(400);
      expect((await jsonOf(batch)).error.message).toBe('JSON-RPC batches are not part of MCP 2025-11-25: send one message per POST');
    });
  });

  describe('sessions', () => {
    it('issues a high-entropy session id and a fresh one per initialize', async () => {
      const a = await initialize();
      const b = await initialize();
      expect(a.sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(a.sessionId).not.toBe(b.sessionId);
    });

    it('answers a request without Mcp-Session-Id with 400', async () => {
      const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key() });
      expect(response.status).toBe(400);
      expect((await jsonOf(response)).error.message).toMatch(/Mcp-Session-Id header is required/);
    });

    it('answers an unknown session with 404, so the client re-initializes', async () => {
      const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': 'not-a-session' });
      expect(response.status).toBe(404);
      expect((await jsonOf(response)).error).toMatchObject({ code: -32001 });
    });

    // A request refused for its credential is refused before its body is read: its id is not known (null).
    it('answers every refusal of a single request with that request id once its body is read; null before, or when there is none', async () => {
      const { sessionId } = await initialize();
      const refusals = [
        await rawPost(s.mcpUrl, { ...LIST_TOOLS, id: 'abc-7' }, { 'x-api-key': key() }),
        await rawPost(s.mcpUrl, { ...LIST_TOOLS, id: 41 }, { 'x-api-key': key(), 'mcp-session-id': 'not-a-session' }),
        await rawPost(s.mcpUrl, { ...LIST_TOOLS, id: 42 }, { 'x-api-key': key(), 'mcp-session-id': sessionId, 'mcp-protocol-version': '1999-01-01' }),
        await rawPost(s.mcpUrl, { ...LIST_TOOLS, id: 43 }, {}),
      ];
      expect(await Promise.all(refusals.map(async (r) => [r.status, (await jsonOf(r)).id]))).toEqual([
        [400, 'abc-7'],
        [404, 41],
        [400, 42],
        [401, null],
      ]);
      const batch = await rawPost(s.mcpUrl, [LIST_TOOLS], { 'x-api-key': key(), 'mcp-session-id': 'not-a-session' });
      expect((await jsonOf(batch)).id).toBeNull();
    });

    it('ends a session on DELETE; the id then answers 404', async () => {
      const c = await connect(s.mcpUrl, key());
      const sessionId = c.transport.sessionId!;
      await c.transport.terminateSession();
      const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': sessionId });
      expect(response.status).toBe(404);
      const again = await fetch(s.mcpUrl, { method: 'DELETE', headers: { 'x-api-key': key(), 'mcp-session-id': sessionId } });
      expect(again.status).toBe(404);
      await c.close();
    });

    it('answers DELETE without a session id with 400', async () => {
      expect((await fetch(s.mcpUrl, { method: 'DELETE', headers: { 'x-api-key': key() } })).status).toBe(400);
    });

    it("refuses another credential's principal on a session as unknown (404), even the same user's other key", async () => {
      const { sessionId } = await initialize();
      const otherUser = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': s.demo.apiKeys.manager, 'mcp-session-id': sessionId });
      expect(otherUser.status).toBe(404);
      const sameUserOtherKey = (await mintKeyForUser(s.core.db, s.demo.emails.admin, 'all')).rawKey;
      const sibling = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': sameUserOtherKey, 'mcp-session-id': sessionId });
      expect(sibling.status).toBe(404);
      // The owner still uses it.
      expect((await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': sessionId })).status).toBe(200);
    });

    it('expires an idle session (404) after an hour without requests', async () => {
      const { sessionId } = await initialize();
      clock += 61 * 60 * 1000;
      const response = await rawPost(s.mcpUrl, LIST_TOOLS, { 'x-api-key': key(), 'mcp-session-id': sessionId });
      expect(response.status).toBe(404);
    });

    it('acknowledges a notification with 202 and refuses a body that is not JSON-RPC with 400', async () => {
      const { sessionId } = await initialize();
      const headers = { 'x-api-key': key(), 'mcp-session-id': sessionId };
      const notified = await rawPost(s.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      expect(notified.status).toBe(202);
      const garbage = await rawPost(s.mcpUrl, { hello: 'world' }, headers);
      expect(garbage.status).toBe(400);
      expect((await jsonOf(garbage)).error.code).toBe(-32700);
    });

    it('answers a body it cannot parse in JSON-RPC too: malformed, __proto__ (found by the fuzzer), not JSON', async () => {
      const { sessionId } = await initialize();
      const post = (body: string, contentType = 'application/json') =>
        fetch(s.mcpUrl, { method: 'POST', headers: { ...MCP_HEADERS, 'content-type': contentType, 'x-api-key': key(), 'mcp-session-id': sessionId }, body });
      const cases = [
        await post('{"jsonrpc":"2.0","id":1,'),
        await post('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_orders","arguments":{"companyId":{"__proto__":"x"}}}}'),
        await post('jsonrpc=2.0', 'application/x-www-form-urlencoded'),
      ];
      for (const response of cases) {
        expect(response.status).toBeGreaterThanOrEqual(400);
        expect(response.status).toBeLessThan(500);
        expect(await jsonOf(response)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
      }
    });

    it('declines the GET stream with 405', async () => {
      const { sessionId } = await initialize();
      const response = await fetch(s.mcpUrl, { headers: { 'x-api-key': key(), 'mcp-session-id': sessionId, accept: 'text/event-stream' } });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST, DELETE');
    });
  });

  describe('headers', () => {
    it.each([['application/json'], ['text/event-stream'], ['*/*']])('answers Accept: %s with 406', async (accept) => {
      const response = await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), accept });
      expect(response.status).toBe(406);
    });

    it('rejects a foreign Origin with 403 (DNS rebinding), and accepts loopback origins and none', async () => {
      const evil = await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), origin: 'http://evil.example.com', host: 'evil.example.com' });
      expect(evil.status).toBe(403);
      expect((await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), origin: 'null' })).status).toBe(403);
      expect((await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), origin: s.baseUrl })).status).toBe(200);
      expect((await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), origin: 'http://localhost:6274' })).status).toBe(200);
      expect((await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key() })).status).toBe(200);
    });

    it('sets the hooks\' headers (x-request-id) on the hijacked response', async () => {
      const response = await rawPost(s.mcpUrl, initializeBody(), { 'x-api-key': key(), 'x-request-id': 'mcp-trace-1' });
      expect(response.headers.get('x-request-id')).toBe('mcp-trace-1');
    });
  });

  describe('credentials', () => {
    it('answers an unauthenticated request with 401 pointing to the protected-resource metadata', async () => {
      const response = await rawPost(s.mcpUrl, initializeBody());
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(`Bearer scope="mcp:employees:read mcp:employees:write mcp:orders:read mcp:orders:write mcp:inventory:read", resource_metadata="${s.baseUrl}/.well-known/oauth-protected-resource"`);
      const invalidToken = await rawPost(s.mcpUrl, initializeBody(), { authorization: 'Bearer nonsense' });
      expect(invalidToken.status).toBe(401);
      expect(invalidToken.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", scope="[^"]+", resource_metadata="/);
    });

    it.each(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])(
      'serves the protected-resource metadata at %s with the spec fields',
      async (path) => {
        const response = await fetch(`${s.baseUrl}${path}`);
        expect(response.status).toBe(200);
        expect(await jsonOf(response)).toEqual({
          resource: s.mcpUrl,
          authorization_servers: [s.baseUrl],
          scopes_supported: ['mcp:employees:read', 'mcp:employees:write', 'mcp:orders:read', 'mcp:orders:write', 'mcp:inventory:read'],
          bearer_methods_supported: ['header'],
        });
      },
    );

    it('refuses a legacy key with 401 saying it is not bound to a user, and counts it', async () => {
      const error = await connect(s.mcpUrl, 'v2live_0123456789abcdef').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StreamableHTTPError);
      expect((error as StreamableHTTPError).code).toBe(401);
      expect((error as Error).message).toContain(NOT_USER_BOUND_MESSAGE);
      const metrics = (await s.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/svc_v4_legacy_key_rejections_total\{surface="mcp"\} [1-9]/);
    });

    it('stops a session on the next request once its key is revoked', async () => {
      const minted = await mintKeyForUser(s.core.db, s.demo.emails.admin, 'all', 'revoked mid-session');
      const c = await connect(s.mcpUrl, minted.rawKey);
      expect(data(await c.client.callTool({ name: 'whoami', arguments: {} })).user.email).toBe('admin@demo.example');
      await revokeKey(s.core.db, minted.keyId);
      const error = await c.client.callTool({ name: 'whoami', arguments: {} }).catch((e: unknown) => e);
      expect((error as StreamableHTTPError).code).toBe(401);
      expect((error as Error).message).toContain('unknown or revoked');
      await c.close();
    });

    it('stops a session on the next request once its user is disabled', async () => {
      const minted = await mintKeyForUser(s.core.db, s.demo.emails.manager, 'all', 'disabled mid-session');
      const c = await connect(s.mcpUrl, minted.rawKey);
      data(await c.client.callTool({ name: 'list_teams', arguments: {} }));
      await setUserDisabled(s.core.db, s.demo.emails.manager, true);
      try {
        const error = await c.client.callTool({ name: 'list_teams', arguments: {} }).catch((e: unknown) => e);
        expect((error as StreamableHTTPError).code).toBe(401);
        expect((error as Error).message).toContain('disabled');
      } finally {
        await setUserDisabled(s.core.db, s.demo.emails.manager, false);
        await c.close();
      }
    });
  });
});

describe('closing the server', () => {
  it('answers a write still waiting for approval, without running it, and closes', async () => {
    const s = await startListeningApp('pglite');
    let asked!: () => void;
    const approvalAsked = new Promise<void>((resolve) => (asked = resolve));
    const c = await connect(s.mcpUrl, s.demo.apiKeys.admin, {
      elicit: () => {
        asked();
        return new Promise(() => undefined); // the user never answers
      },
    });
    const pending = c.client.callTool({ name: 'create_team', arguments: { name: 'Never Approved', companyId: s.demo.companies.acme } });
    await approvalAsked;
    await s.app.close();
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(textJson(result).error).toMatchObject({ code: 'approval_declined', message: expect.stringContaining('(no answer)') });
    await c.close().catch(() => undefined);
    await s.core.close();
  });
});
