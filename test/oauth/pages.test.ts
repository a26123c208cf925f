import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { sql } from '../../src/store/sql.js';
import { authorizationRequest, authorizeInBrowser, csrfOf, discoverAndRegister, exchangeCode, FormBrowser, tokenPost } from './support.js';

describe.each(backends())('application pages (%s)', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(async () => s.close());

  it('sends a visitor without a sign-in to the sign-in page, and refuses a wrong password', async () => {
    const browser = new FormBrowser();
    const keys = await browser.fetch(`${s.baseUrl}/app/developers/api-keys`);
    expect(keys.status).toBe(303);
    expect(keys.headers.get('location')).toBe('/app/sign-in?return=%2Fapp%2Fdevelopers%2Fapi-keys');
    expect((await browser.signIn(s.baseUrl, 'admin@demo.example', 'wrong-password')).status).toBe(401);
    expect((await browser.signIn(s.baseUrl, 'nobody@demo.example')).status).toBe(401);
  });

  it('mints a key within the role, shows it once, lists it with capabilities and last use, and revokes it', async () => {
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, 'manager@acme.example')).status).toBe(303);
    const page = await browser.follow(`${s.baseUrl}/app/developers/api-keys`, '\u0000');
    expect(page.html).toContain('value="mcp:teams:read"');
    expect(page.html).not.toContain('value="mcp:teams:write"'); // beyond a manager's role
    const minted = await browser.fetch(`${s.baseUrl}/app/developers/api-keys`, {
      form: { _csrf: csrfOf(page.html), name: 'CI export', capabilities: ['mcp:employees:read', 'mcp:orders:read'] },
    });
    expect(minted.status).toBe(201);
    const html = await minted.text();
    const rawKey = /data-testid="raw-key">(svc_sk_[^<]+)</.exec(html)?.[1];
    expect(rawKey).toBeDefined();
    const me = await fetch(`${s.baseUrl}/v4/me`, { headers: { 'x-api-key': rawKey! } });
    expect(me.status).toBe(200);

    const listed = await browser.follow(`${s.baseUrl}/app/developers/api-keys`, '\u0000');
    expect(listed.html).not.toContain(rawKey!);
    expect(listed.html).toContain('CI export');
    expect(listed.html).toContain('mcp:orders:read');
    const keyId = rawKey!.split('_')[2]!;
    expect(listed.html).toMatch(new RegExp(`svc_sk_${keyId}_…</code></td>\\s*<td>.*?</td><td>[^<]+</td>\\s*<td>\\d{4}-`, 's'));

    const beyond = await browser.fetch(`${s.baseUrl}/app/developers/api-keys`, {
      form: { _csrf: csrfOf(listed.html), name: 'too much', capabilities: 'mcp:teams:write' },
    });
    expect(beyond.status).toBe(400);
    const forged = await browser.fetch(`${s.baseUrl}/app/developers/api-keys`, { form: { _csrf: 'x', name: 'csrf', capabilities: 'mcp:orders:read' } });
    expect(forged.status).toBe(403);

    const revoked = await browser.fetch(`${s.baseUrl}/app/developers/api-keys/${keyId}/revoke`, { form: { _csrf: csrfOf(listed.html) } });
    expect(revoked.status).toBe(303);
    expect((await fetch(`${s.baseUrl}/v4/me`, { headers: { 'x-api-key': rawKey! } })).status).toBe(401);

    // Signing out ends the session: the pages ask for a sign-in again.
    expect((await browser.fetch(`${s.baseUrl}/app/sign-out`, { form: { _csrf: csrfOf(listed.html) } })).status).toBe(303);
    expect((await browser.fetch(`${s.baseUrl}/app/developers/api-keys`)).status).toBe(303);
  });

  it('lists a connection with client, permissions and expiry; narrowing takes effect at once; disconnect revokes', async () => {
    const registered = await discoverAndRegister(s.baseUrl, 'cursor://anysphere.cursor-retrieval/oauth/callback');
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read mcp:employees:read');
    const browser = new FormBrowser();
    const { callback } = await authorizeInBrowser(browser, request.url, registered.redirectUri, { grant: ['mcp:orders:read', 'mcp:employees:read'] });
    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    const bearer = { authorization: `Bearer ${tokens.access_token}` };

    const page = await browser.follow(`${s.baseUrl}/app/connections`, '\u0000');
    expect(page.html).toContain('Test MCP client');
    expect(page.html).toContain('cursor://');
    expect(page.html).toMatch(/expires \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(page.html).toContain('list_orders');
    const grantId = /action="\/app\/connections\/([^"/]+)"/.exec(page.html)![1]!;

    const widen = await browser.fetch(`${s.baseUrl}/app/connections/${grantId}`, {
      form: { _csrf: csrfOf(page.html), scopes: ['mcp:employees:read', 'mcp:orders:write'] },
    });
    expect(widen.status).toBe(400);
    const narrowed = await browser.fetch(`${s.baseUrl}/app/connections/${grantId}`, { form: { _csrf: csrfOf(page.html), scopes: 'mcp:employees:read' } });
    expect(narrowed.status).toBe(303);
    const principal = await s.core.auth.authenticate(bearer, 'mcp');
    expect([...principal.capabilities]).toEqual(['mcp:employees:read']);

    const disconnected = await browser.fetch(`${s.baseUrl}/app/connections/${grantId}/disconnect`, { form: { _csrf: csrfOf(page.html) } });
    expect(disconnected.status).toBe(303);
    await expect(s.core.auth.authenticate(bearer, 'mcp')).rejects.toMatchObject({ status: 401 });
    const refresh = await tokenPost(s.baseUrl, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: registered.client.client_id });
    expect(refresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await browser.follow(`${s.baseUrl}/app/connections`, '\u0000')).html).not.toContain('Test MCP client');
  });

  it("refuses another user's connection and key", async () => {
    const browser = new FormBrowser();
    await browser.signIn(s.baseUrl, 'eve@acme.example');
    const page = await browser.follow(`${s.baseUrl}/app/connections`, '\u0000');
    const response = await browser.fetch(`${s.baseUrl}/app/connections/not-mine/disconnect`, { form: { _csrf: csrfOf(page.html) } });
    expect(response.status).toBe(404);
    const keys = await s.core.db.query<{ id: string }>(
      sql`SELECT id FROM api_keys WHERE revoked_at IS NULL AND user_id <> (SELECT id FROM users WHERE email = 'eve@acme.example') LIMIT 1`,
    );
    const revoke = await browser.fetch(`${s.baseUrl}/app/developers/api-keys/${keys[0]!.id}/revoke`, { form: { _csrf: csrfOf(page.html) } });
    expect(revoke.status).toBe(404);
  });
});
