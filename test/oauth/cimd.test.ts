import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sql } from '../../src/store/sql.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, CIMD_ORIGIN as ORIGIN, DocumentServer, FormBrowser, INSECURE, register, type Document } from './support.js';

/*
 * Client ID Metadata Documents (CIMD): a client_id that is an https URL names a JSON document the
 * authorization server fetches. The documents are served by a real HTTP server on loopback; the
 * service's fetch is pointed at it for the host `cimd.test` (the test setting: outside it, loopback
 * and private addresses are refused, which the last test shows with the service's own fetch).
 */

/** A document as Claude Code publishes it (anthropics/claude-code#44388): a port-less localhost callback. */
function claudeCodeDocument(clientId: string, extra: Record<string, unknown> = {}) {
  return {
    client_id: clientId,
    client_name: 'Claude Code',
    client_uri: 'https://claude.ai',
    redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...extra,
  };
}

describe('client ID metadata documents (CIMD)', () => {
  let s: ListeningTestApp;
  let as: oauth.AuthorizationServer;
  const documents = new DocumentServer();

  beforeAll(async () => {
    await documents.start();
    s = await startListeningApp('pglite', {
      core: { fetchClientMetadata: documents.fetch },
    });
    const issuer = new URL(s.baseUrl);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...INSECURE }));
  });
  afterAll(async () => {
    await s?.close();
    await documents.close();
  });

  async function authorizationUrl(clientId: string, redirectUri: string) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'mcp:orders:read',
      state,
      resource: s.mcpUrl,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    return { url: url.href, verifier, state };
  }

  /** The authorization server's answer to an authorization request from a client it must not accept. */
  async function refusal(clientId: string, redirectUri = 'http://localhost:53123/callback'): Promise<{ status: number; text: string; location: string | null }> {
    const response = await fetch((await authorizationUrl(clientId, redirectUri)).url, { redirect: 'manual' });
    return { status: response.status, text: await response.text(), location: response.headers.get('location') };
  }

  it('advertises CIMD beside registration', async () => {
    expect(as).toMatchObject({ client_id_metadata_document_supported: true, registration_endpoint: `${s.baseUrl}/api/oauth/register` });
    expect(as.token_endpoint_auth_methods_supported).toEqual(['none']);
  });

  it('a client named by its document signs in, consents (its host shown first), calls a tool and refreshes; the document is fetched once', async () => {
    const path = '/oauth/claude-code-client-metadata';
    const clientId = documents.serve(path, { headers: { 'cache-control': 'max-age=3600' }, body: claudeCodeDocument(`${ORIGIN}${path}`) });
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    // Claude Code listens on an ephemeral port; its document lists the port-less loopback URI.
    const redirectUri = 'http://localhost:53123/callback';

    const request = await authorizationUrl(clientId, redirectUri);
    const { callback, consentHtml } = await authorizeInBrowser(new FormBrowser(), request.url, redirectUri);
    expect(consentHtml).toContain('<strong>cimd.test</strong> (calls itself “Claude Code”)');
    expect(consentHtml).toContain('data-testid="client-host">cimd.test</span>');
    expect(consentHtml).not.toContain('Unverified application');

    const params = oauth.validateAuthResponse(as, client, callback, request.state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, request.verifier, {
        additionalParameters: { resource: s.mcpUrl },
        ...INSECURE,
      }),
    );
    expect(tokens.scope).toBe('mcp:orders:read');
    const mcp = new Client({ name: 'claude-code', version: '2.1.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }));
    expect((await mcp.callTool({ name: 'list_orders', arguments: {} })).isError).toBeFalsy();
    await mcp.close();
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, INSECURE),
    );
    expect(refreshed.access_token).toBeTruthy();

    // Cached for its max-age: a second sign-in and the connections page do not fetch it again.
    const again = await authorizationUrl(clientId, redirectUri);
    const browser = new FormBrowser();
    await authorizeInBrowser(browser, again.url, redirectUri);
    const connections = await (await browser.fetch(`${s.baseUrl}/app/connections`)).text();
    expect(connections).toContain('<h2>Claude Code</h2>');
    expect(documents.fetched(path)).toBe(1);
    // Nothing of a CIMD client is stored as a registration.
    const stored = await s.core.db.query<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM oauth_records WHERE kind = 'Client' AND payload->>'client_id' = ${clientId}`,
    );
    expect(stored[0]!.n).toBe(0);
  });

  it('refuses a redirect URI the document does not list, without redirecting to it', async () => {
    const path = '/redirect-not-listed';
    const clientId = documents.serve(path, { body: claudeCodeDocument(`${ORIGIN}${path}`) });
    const answer = await refusal(clientId, 'https://evil.example/callback');
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.text).toContain('redirect_uri');
  });

  it('refuses a document whose client_id is not its own URL', async () => {
    const path = '/impostor';
    const clientId = documents.serve(path, { body: claudeCodeDocument(`${ORIGIN}/someone-else`) });
    const answer = await refusal(clientId);
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.text).toContain('invalid_client');
  });

  it.each([
    ['a client secret', { client_secret: 'shh' }],
    ['a shared-secret auth method', { token_endpoint_auth_method: 'client_secret_post' }],
    ['a plain-http web URI', { logo_uri: 'http://cimd.test/logo.png' }],
    ['a redirect URI our policy refuses', { redirect_uris: ['http://app.example.com/callback'] }],
  ])('refuses a document with %s', async (_label, extra) => {
    const path = `/bad-${Object.keys(extra)[0]}`;
    const clientId = documents.serve(path, { body: claudeCodeDocument(`${ORIGIN}${path}`, extra) });
    const answer = await refusal(clientId, 'http://localhost:53123/callback');
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.text).toMatch(/invalid_client|invalid_redirect_uri/);
  });

  it.each([
    ['a redirect (no redirect is followed)', { status: 302, headers: { location: `${ORIGIN}/elsewhere` }, body: '' }],
    ['a body over 5 KiB', { body: { padding: 'x'.repeat(6000) } }],
    ['a body that is not a JSON object', { body: '["a", "list"]' }],
    ['a 404', { status: 404, body: '' }],
  ])('refuses %s', async (label, document) => {
    const path = `/refused-${label.split(' ')[1]}`;
    const clientId = documents.serve(path, document as Document);
    const answer = await refusal(clientId);
    expect(answer.status, label).toBe(400);
    expect(answer.text).toContain('invalid_client');
  });

  it('gives up on a document that takes too long (2.5 s per fetch)', async () => {
    const path = '/slow';
    const clientId = documents.serve(path, { delayMs: 12_000, body: claudeCodeDocument(`${ORIGIN}/slow`) });
    const started = performance.now();
    const answer = await refusal(clientId);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('invalid_client: client_id metadata document fetch failed');
    // Had it waited for the document, the answer would have taken the document's 12 s.
    expect(performance.now() - started).toBeLessThan(12_000);
  });

  it.each([
    ['plain http', 'http://cimd.test/doc'],
    ['a fragment', `${ORIGIN}/doc#x`],
    ['dot segments', `${ORIGIN}/a/../doc`],
    ['user info', 'https://user@cimd.test/doc'],
  ])('never fetches a client_id with %s', async (_label, clientId) => {
    const before = [...documents.requests.values()].reduce((a, b) => a + b, 0);
    const answer = await refusal(clientId);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('invalid_client');
    expect([...documents.requests.values()].reduce((a, b) => a + b, 0)).toBe(before);
  });

  it('registration stays the fallback for clients without a document', async () => {
    const registered = await register(s.baseUrl, { client_name: 'no document', redirect_uris: ['http://127.0.0.1:40111/callback'] });
    expect(registered.status).toBe(201);
  });
});

describe('client ID metadata documents outside the test setting', () => {
  let s: ListeningTestApp;
  let fixture: NetServer;
  let connections = 0;
  beforeAll(async () => {
    // Anything listening inside: it must never even be connected to.
    fixture = createNetServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => fixture.listen(0, '127.0.0.1', resolve));
    s = await startListeningApp('pglite');
  });
  afterAll(async () => {
    await s?.close();
    await new Promise<void>((resolve) => fixture.close(() => resolve()));
  });

  it.each([
    ['a loopback name', (port: number) => `https://localhost:${port}/client.json`],
    ['a loopback address', (port: number) => `https://127.0.0.1:${port}/client.json`],
    ['a private address', () => 'https://10.1.2.3/client.json'],
    ['a link-local address (cloud metadata)', () => 'https://169.254.169.254/latest/meta-data'],
    ['an IPv4-mapped IPv6 loopback', (port: number) => `https://[::ffff:127.0.0.1]:${port}/client.json`],
    ['a name that does not resolve', () => 'https://no-such-host.invalid/client.json'],
  ])('refuses a document at %s without connecting', async (_label, clientIdAt) => {
    const clientId = clientIdAt((fixture.address() as { port: number }).port);
    const url = new URL(`${s.baseUrl}/api/oauth/authorize`);
    url.search = new URLSearchParams({ client_id: clientId, redirect_uri: 'http://localhost:5000/cb', response_type: 'code', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' }).toString();
    const response = await fetch(url, { redirect: 'manual' });
    expect(response.status).toBe(400);
    // Refused before fetching ("fetch failed" would mean it was tried).
    expect(await response.text()).toContain('invalid_client: client_id metadata document fetch not allowed');
    expect(connections).toBe(0);
  });
});
