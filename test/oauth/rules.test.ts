import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, jsonOf, rawPost } from '../mcp/support/mcp.js';
import { setUserDisabled } from '../../src/domain/admin.js';
import { sql } from '../../src/store/sql.js';
import { authorizationRequest, authorizeInBrowser, csrfOf, discoverAndRegister, exchangeCode, FormBrowser, register, tokenPost, type RegisteredClient } from './support.js';

const FIVE = ['mcp:employees:read', 'mcp:employees:write', 'mcp:orders:read', 'mcp:orders:write', 'mcp:inventory:read'];

describe.each(backends())('OAuth rules (%s)', (backend) => {
  let s: ListeningTestApp;
  /** How far the server's clock runs ahead of the wall clock. */
  let ahead = 0;
  let registered: RegisteredClient;

  /** Authorizes with the given grant on the consent screen and exchanges the code. */
  async function tokensFor(scope: string, grant: string[], email = 'admin@demo.example') {
    const request = await authorizationRequest(registered, s.mcpUrl, scope);
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri, { grant, email });
    return exchangeCode(registered, callback, request, s.mcpUrl);
  }

  /** Gets a code without exchanging it. */
  async function codeFor(extra: Record<string, string> = {}) {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', extra);
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
    return { request, code: callback.searchParams.get('code')!, callback };
  }

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => new Date(Date.now() + ahead) } });
    registered = await discoverAndRegister(s.baseUrl);
  });
  afterAll(async () => s.close());

  it('serves RFC 8414 metadata with the spec fields and only the five scopes, and RFC 9728 in both forms', async () => {
    const as = (await (await fetch(`${s.baseUrl}/.well-known/oauth-authorization-server`)).json()) as { scopes_supported: string[] };
    expect(as).toMatchObject({
      issuer: s.baseUrl,
      authorization_endpoint: `${s.baseUrl}/api/oauth/authorize`,
      token_endpoint: `${s.baseUrl}/api/oauth/token`,
      registration_endpoint: `${s.baseUrl}/api/oauth/register`,
      revocation_endpoint: `${s.baseUrl}/api/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    });
    expect([...as.scopes_supported].sort()).toEqual([...FIVE].sort());
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const prm = await (await fetch(`${s.baseUrl}${path}`)).json();
      expect(prm).toEqual({ resource: s.mcpUrl, authorization_servers: [s.baseUrl], scopes_supported: FIVE, bearer_methods_supported: ['header'] });
    }
  });

  it('registers public clients with https, loopback and custom-scheme redirects; refuses the rest with RFC 7591 codes', async () => {
    const accepted = ['https://app.example.com/cb', 'http://127.0.0.1:33418/cb', 'http://[::1]/cb', 'http://localhost:3000/cb', 'cursor://anysphere.cursor-retrieval/oauth/callback'];
    for (const uri of accepted) {
      const { status, body } = await register(s.baseUrl, { redirect_uris: [uri], client_name: 'ok' });
      expect(status, uri).toBe(201);
      expect(body.client_secret).toBeUndefined();
      expect(body.token_endpoint_auth_method).toBe('none');
    }
    const refused = ['http://app.example.com/cb', 'http://localhost.evil.example/cb', 'javascript:alert(1)', 'file:///etc/passwd', 'https://app.example.com/cb#frag', 'not a uri'];
    for (const uri of refused) {
      const { status, body } = await register(s.baseUrl, { redirect_uris: [uri] });
      expect(status, uri).toBe(400);
      expect(body.error, uri).toBe('invalid_redirect_uri');
    }
    // One bad member refuses the whole set: the client learns which, rather than losing a redirect silently.
    const mixed = await register(s.baseUrl, { redirect_uris: ['https://app.example.com/cb', 'http://app.example.com/cb'] });
    expect(mixed).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    expect(mixed.body.error_description).toContain('http://app.example.com/cb');
    // Asking for a secret gets a public client (RFC 7591 §3.2.1): PKCE protects its codes.
    for (const method of ['client_secret_basic', 'client_secret_post', 'client_secret_jwt']) {
      const withSecret = await register(s.baseUrl, { redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: method, client_secret: 'mine' });
      expect(withSecret.status, method).toBe(201);
      expect(withSecret.body.token_endpoint_auth_method).toBe('none');
      expect(withSecret.body.client_secret).toBeUndefined();
    }
    const privateKeyJwt = await register(s.baseUrl, { redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'private_key_jwt' });
    expect(privateKeyJwt).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata' } });
  });

  it('refuses plain PKCE and a missing challenge', async () => {
    const attempts: Record<string, string>[] = [{ code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }, { code_challenge: '' }];
    for (const extra of attempts) {
      const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', extra);
      const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
      expect(callback.searchParams.get('error')).toBe('invalid_request');
    }
  });

  it('refuses a missing or wrong code verifier', async () => {
    const { code } = await codeFor();
    const base = { grant_type: 'authorization_code', code, client_id: registered.client.client_id, redirect_uri: registered.redirectUri, resource: s.mcpUrl };
    expect(await tokenPost(s.baseUrl, base)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const { code: second } = await codeFor();
    const wrong = await tokenPost(s.baseUrl, { ...base, code: second, code_verifier: oauth.generateRandomCodeVerifier() });
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refuses a redirect URI that was not registered, and never redirects to it (no open redirect)', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', { redirect_uri: 'https://evil.example/steal' });
    const response = await fetch(request.url, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('redirect_uri');
    // The sign-in page's return path only ever leads inside the application.
    const browser = new FormBrowser();
    const page = await browser.follow(`${s.baseUrl}/app/sign-in?return=${encodeURIComponent('//evil.example/x')}`, '\u0000');
    const signedIn = await browser.fetch(`${s.baseUrl}/app/sign-in`, {
      form: { _csrf: csrfOf(page.html), email: 'admin@demo.example', password: 'demo-password', return: 'https://evil.example/' },
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/app/developers/api-keys');
  });

  it('accepts a loopback redirect on another port than registered (RFC 8252), and only that', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', { redirect_uri: 'http://127.0.0.1:41234/callback' });
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, 'http://127.0.0.1:41234/callback');
    expect(callback.searchParams.get('code')).toBeTruthy();
    const otherPath = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', { redirect_uri: 'http://127.0.0.1:41234/other' });
    expect((await fetch(otherPath.url, { redirect: 'manual' })).status).toBe(400);
  });

  it('codes are single use: a replay fails and revokes what the code issued', async () => {
    const { request, callback } = await codeFor();
    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    const replay = await tokenPost(s.baseUrl, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      client_id: registered.client.client_id,
      redirect_uri: registered.redirectUri,
      code_verifier: request.verifier,
    });
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` })).status).toBe(401);
  });

  it('two exchanges of one code at once: exactly one gets tokens', async () => {
    const { request, callback } = await codeFor();
    const exchange = () =>
      tokenPost(s.baseUrl, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        client_id: registered.client.client_id,
        redirect_uri: registered.redirectUri,
        code_verifier: request.verifier,
        resource: s.mcpUrl,
      });
    const answers = await Promise.all([exchange(), exchange(), exchange()]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400]);
    expect(answers.filter((a) => a.status === 400).every((a) => (a.body as { error: string }).error === 'invalid_grant')).toBe(true);
  });

  it('binds the audience: another resource is refused, and a token for another audience does not work on /mcp', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read', { resource: 'https://other.example/mcp' });
    const response = await fetch(request.url, { redirect: 'manual' });
    const location = new URL(response.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_target');

    const tokens = await tokensFor('mcp:orders:read', ['mcp:orders:read']);
    await s.core.db.query(sql`UPDATE oauth_records SET payload = jsonb_set(payload, '{aud}', '"https://other.example/mcp"')
      WHERE kind = 'AccessToken' AND payload->>'grantId' IN (SELECT payload->>'grantId' FROM oauth_records WHERE kind = 'AccessToken')`);
    const refused = await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('not issued for');
  });

  it('compares resource after RFC 3986 normalisation: scheme and host case, default port; a different path is another resource', async () => {
    const url = new URL(s.mcpUrl);
    for (const spelling of [s.mcpUrl.replace('http://127.0.0.1', 'HTTP://127.0.0.1'), `${url.protocol}//${url.host}/mcp`]) {
      const request = await authorizationRequest(registered, spelling, 'mcp:orders:read');
      const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
      const tokens = await exchangeCode(registered, callback, request, spelling);
      expect(tokens.scope, spelling).toBe('mcp:orders:read');
      expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` })).status).toBe(200);
    }
    const trailing = await authorizationRequest(registered, `${s.mcpUrl}/`, 'mcp:orders:read');
    const location = new URL((await fetch(trailing.url, { redirect: 'manual' })).headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_target');
  });

  it('no consent dead end: a request for nothing the role can grant goes back to the client as invalid_scope', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:write');
    const { callback, consentHtml } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri, { email: 'eve@acme.example' });
    expect(consentHtml).toBe('');
    expect(callback.searchParams.get('error')).toBe('invalid_scope');
    expect(callback.searchParams.get('error_description')).toContain('role employee');
    expect(callback.searchParams.get('state')).toBe(request.state);
  });

  it('the 401 challenge names the scopes to ask for first', async () => {
    const response = await rawPost(s.mcpUrl, initializeBody());
    expect(response.headers.get('www-authenticate')).toContain('scope="mcp:employees:read mcp:employees:write mcp:orders:read mcp:orders:write mcp:inventory:read"');
  });

  it('a registered client nobody authorizes expires after a day and is purged; the first consent keeps it', async () => {
    const unused = await register(s.baseUrl, { redirect_uris: ['https://unused.example/cb'] });
    const kept = await discoverAndRegister(s.baseUrl, 'http://127.0.0.1:53999/callback');
    const expiryOf = async (clientId: string) =>
      (await s.core.db.query<{ expires_at: Date | string | null }>(sql`SELECT expires_at FROM oauth_records
        WHERE kind = 'Client' AND payload->>'client_id' = ${clientId}`))[0]?.expires_at;
    const inADay = Date.now() + 86_400_000;
    expect(Math.abs(new Date((await expiryOf(unused.body.client_id))!).getTime() - inADay)).toBeLessThan(60_000);

    const request = await authorizationRequest(kept, s.mcpUrl, 'mcp:orders:read');
    await authorizeInBrowser(new FormBrowser(), request.url, kept.redirectUri);
    expect(await expiryOf(kept.client.client_id)).toBeNull();

    // A day passes for the unused one: it is unknown (the client registers again), then purged.
    await s.core.db.query(sql`UPDATE oauth_records SET expires_at = now() - interval '1 second'
      WHERE kind = 'Client' AND payload->>'client_id' = ${unused.body.client_id}`);
    const stale = await fetch(`${s.baseUrl}/api/oauth/authorize?client_id=${unused.body.client_id}&response_type=code&redirect_uri=https://unused.example/cb`, { redirect: 'manual' });
    expect(stale.status).toBe(400);
    expect(await stale.text()).toContain('invalid_client');
    await register(s.baseUrl, { redirect_uris: ['https://next.example/cb'] });
    expect(await expiryOf(unused.body.client_id)).toBeUndefined();
    expect(await expiryOf(kept.client.client_id)).toBeNull();
  });

  it('refuses an expired access token', async () => {
    const tokens = await tokensFor('mcp:orders:read', ['mcp:orders:read']);
    expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` })).status).toBe(200);
    ahead = (s.core.config.oauthAccessTokenTtl + 1) * 1000;
    try {
      const expired = await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` });
      expect(expired.status).toBe(401);
      expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');
    } finally {
      ahead = 0;
    }
  });

  it('never grants a scope beyond the five, even when asked; the capability stays enforced', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read mcp:teams:write mcp:company:read');
    const { callback, consentHtml } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri, {
      grant: ['mcp:orders:read', 'mcp:teams:write', 'mcp:company:read'],
    });
    expect(consentHtml).not.toContain('value="mcp:teams:write"');
    expect(consentHtml).toContain('Cannot be granted to applications over OAuth: mcp:teams:write, mcp:company:read');
    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    expect(tokens.scope).toBe('mcp:orders:read');
    const principal = await s.core.auth.authenticate({ authorization: `Bearer ${tokens.access_token}` }, 'mcp');
    expect([...principal.capabilities]).toEqual(['mcp:orders:read']);
  });

  it('an OAuth access token is not a credential on v4 REST', async () => {
    const tokens = await tokensFor('mcp:orders:read', ['mcp:orders:read']);
    const response = await fetch(`${s.baseUrl}/v4/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(response.status).toBe(401);
  });

  it('stores codes and tokens only hashed', async () => {
    const { request, callback } = await codeFor();
    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    for (const secret of [callback.searchParams.get('code')!, tokens.access_token, tokens.refresh_token!]) {
      const rows = await s.core.db.query(sql`SELECT 1 FROM oauth_records WHERE id_hash = ${secret} OR payload::text LIKE ${`%${secret}%`}`);
      expect(rows).toHaveLength(0);
    }
  });

  it('answers an unknown client with invalid_client (401) so it registers again', async () => {
    const response = await tokenPost(s.baseUrl, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'no-such-client' });
    expect(response).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });

  it('a disabled user cannot sign in, and their tokens stop at the next request and cannot be refreshed', async () => {
    const tokens = await tokensFor('mcp:orders:read', ['mcp:orders:read'], 'manager@acme.example');
    await setUserDisabled(s.core.db, 'manager@acme.example', true);
    try {
      const call = await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` });
      expect(call.status).toBe(401);
      const refresh = await tokenPost(s.baseUrl, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: registered.client.client_id });
      expect(refresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect((await new FormBrowser().signIn(s.baseUrl, 'manager@acme.example')).status).toBe(401);
    } finally {
      await setUserDisabled(s.core.db, 'manager@acme.example', false);
    }
  });

  it('the consent form is CSRF-protected, unframeable and offers no CORS', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read');
    const browser = new FormBrowser();
    await browser.signIn(s.baseUrl, 'admin@demo.example');
    const consent = await browser.follow(request.url, registered.redirectUri);
    expect(consent.url).toContain('/app/interaction/');
    expect(consent.response.headers.get('x-frame-options')).toBe('DENY');
    expect(consent.response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(consent.response.headers.get('access-control-allow-origin')).toBeNull();
    const forged = await browser.fetch(consent.url, { form: { _csrf: 'forged', decision: 'allow', scopes: 'mcp:orders:read' } });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('location')).toBeNull();
    const preflight = await fetch(consent.url, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    // The genuine form still works afterwards.
    const done = await browser.follow(consent.url, registered.redirectUri, { form: { _csrf: csrfOf(consent.html), decision: 'allow', scopes: 'mcp:orders:read' } });
    expect(new URL(done.url).searchParams.get('code')).toBeTruthy();
  });

  it('denial returns access_denied with the state to the client', async () => {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read');
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri, { decision: 'deny' });
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(request.state);
  });

  it('rotates refresh tokens; a double refresh at once gets one answer twice, a later reuse revokes the family', async () => {
    const tokens = await tokensFor('mcp:orders:read', ['mcp:orders:read']);
    const refresh = (token: string) =>
      tokenPost(s.baseUrl, { grant_type: 'refresh_token', refresh_token: token, client_id: registered.client.client_id });
    const [first, second] = await Promise.all([refresh(tokens.refresh_token!), refresh(tokens.refresh_token!)]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(second.body).toMatchObject({ access_token: first.body.access_token, refresh_token: first.body.refresh_token });
    expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${first.body.access_token}` })).status).toBe(200);
    // Past the grace window the old token is a replay: the whole connection is revoked.
    ahead = (s.core.config.oauthRefreshGraceSeconds + 1) * 1000;
    try {
      expect(await refresh(tokens.refresh_token!)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    } finally {
      ahead = 0;
    }
    expect((await refresh(first.body.refresh_token)).status).toBe(400);
    expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${first.body.access_token}` })).status).toBe(401);
  });

  it('a write tool with a read-only grant gets 403 insufficient_scope naming the scope', async () => {
    const tokens = await tokensFor('mcp:orders:read mcp:orders:write', ['mcp:orders:read']);
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const init = await rawPost(s.mcpUrl, initializeBody(), auth);
    const session = init.headers.get('mcp-session-id')!;
    const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    await rawPost(s.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
    // mcp:teams:write is beyond what OAuth grants: an ordinary tool error, not a step-up that could never succeed.
    const call = await rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_team', arguments: { name: 'X' } } }, headers);
    expect(call.status).toBe(200);
    expect((await jsonOf(call)).result).toMatchObject({ isError: true });
    const orderWrite = await rawPost(s.mcpUrl, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'create_order', arguments: {} } }, headers);
    expect(orderWrite.status).toBe(403);
    expect(orderWrite.headers.get('www-authenticate')).toContain('mcp:orders:write');
  });
});
