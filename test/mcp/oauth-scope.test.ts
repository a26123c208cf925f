import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/access/authenticate.js';
import type { Capability } from '../../src/access/capabilities.js';
import { loadUserByEmail, principalFromUser } from '../../src/access/principal.js';
import { unauthorized } from '../../src/kit/errors.js';
import { data, initializeBody, jsonOf, rawPost } from './support/mcp.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

const GRANTED: Capability[] = ['mcp:employees:read', 'mcp:orders:read'];
const TOKEN = 'oauth-access-token-for-tests';

/*
 * The OAuth server (issue 7) issues and verifies access tokens; here a verifier that knows one
 * token stands in for it, so that what is under test, the MCP endpoint's answer to an OAuth
 * principal lacking a scope, runs against the real server and the real SDK client.
 */
describe('MCP with an OAuth access token', () => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
    const user = (await loadUserByEmail(s.core.db, s.demo.emails.admin))!;
    s.core.auth = createAuthenticator(s.core.db, {
      accessTokens: {
        async verify(token) {
          if (token !== TOKEN) throw unauthorized('invalid_token', 'The access token is invalid or revoked');
          return principalFromUser(user, GRANTED, { kind: 'oauth', clientId: 'client-1', grantId: 'grant-1', scopes: GRANTED });
        },
      },
    });
  });
  afterAll(() => s.close());

  async function connectWithToken() {
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
    await client.connect(transport);
    return client;
  }

  it('runs the tools the token grants', async () => {
    const client = await connectWithToken();
    expect(data(await client.callTool({ name: 'whoami', arguments: {} })).credential).toMatchObject({ kind: 'oauth' });
    expect(data(await client.callTool({ name: 'list_employees', arguments: {} })).totalCount).toBeGreaterThan(0);
    await client.close();
  });

  it('answers a tool beyond the granted scopes with HTTP 403 insufficient_scope naming granted + needed', async () => {
    const client = await connectWithToken();
    const error = await client.callTool({ name: 'create_employee', arguments: { displayName: 'X', email: 'x@acme.example' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(403);
    await client.close();

    // The header itself, as a client stepping up its authorization reads it.
    const init = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    const sessionId = init.headers.get('mcp-session-id')!;
    const denied = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'search_inventory', arguments: {} } }),
    });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mcp:employees:read mcp:orders:read mcp:inventory:read", resource_metadata="${s.baseUrl}/.well-known/oauth-protected-resource"`,
    );
    expect((await jsonOf(denied)).error).toMatchObject({ data: { code: 'insufficient_scope' } });

    // A capability OAuth never grants is no step-up: the tool fails as for an API key without it.
    const never = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_teams', arguments: {} } }),
    });
    expect(never.status).toBe(200);
    const result = (await jsonOf(never)).result;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0].text)).toMatchObject({ error: { code: 'missing_capability' } });
  });

  it('steps up a 2026-07-28 request the same way, before the revision is served', async () => {
    const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const call = (name: string) =>
      fetch(s.mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': name,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'modern-1', method: 'tools/call', params: { name, arguments: {}, _meta: envelope } }),
      });
    const denied = await call('search_inventory');
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toContain('scope="mcp:employees:read mcp:orders:read mcp:inventory:read"');
    expect(await jsonOf(denied)).toMatchObject({ id: 'modern-1', error: { data: { code: 'insufficient_scope' } } });
    const allowed = await call('whoami');
    expect(allowed.status).toBe(200);
    expect((await jsonOf(allowed)).result.structuredContent.credential).toMatchObject({ kind: 'oauth' });
  });

  it('steps up a 2025-03-26 batch as a whole: one call lacking its scope refuses the batch with the challenge', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const init = await rawPost(s.mcpUrl, initializeBody('2025-03-26'), headers);
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')! };
    const whoami = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } };
    const search = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'search_inventory', arguments: {} } };
    const denied = await rawPost(s.mcpUrl, [whoami, search], session);
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toContain('scope="mcp:employees:read mcp:orders:read mcp:inventory:read"');
    expect((await jsonOf(denied)).error).toMatchObject({ data: { code: 'insufficient_scope' } });
    const allowed = await rawPost(s.mcpUrl, [whoami], session);
    expect(allowed.status).toBe(200);
    expect((await jsonOf(allowed))[0].result.structuredContent.credential).toMatchObject({ kind: 'oauth' });
  });

  it('answers an invalid or revoked token with 401 invalid_token', async () => {
    const response = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { authorization: 'Bearer revoked', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
