import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN_LIMITS } from '../../src/oauth/routes.js';
import { SIGN_IN_LIMITS } from '../../src/pages/account-pages.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizationRequest, authorizeInBrowser, csrfOf, DEMO_PASSWORD, discoverAndRegister, exchangeCode, FormBrowser, tokenPost } from './support.js';

/*
 * The brute-force limits of the two password-like doors, the sign-in form and the token endpoint,
 * per address and per credential (addresses set through inject's remoteAddress); and the OAuth
 * counters those flows leave in /metrics. In-process shared state: the two-instance test proves
 * the same limits shared through Redis.
 */

describe('rate limits on sign-in and token, and OAuth metrics', () => {
  let s: ListeningTestApp;

  beforeAll(async () => {
    s = await startListeningApp('pglite');
  });
  afterAll(async () => s?.close());

  /** One sign-in form post from `ip`, with the cookie and token a GET of the form issued to it. */
  async function signIn(ip: string, email: string, password = 'not-the-password') {
    const form = await s.app.inject({ url: '/app/sign-in', remoteAddress: ip });
    const cookie = form.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    return s.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      remoteAddress: ip,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrfOf(form.body), email, password }).toString(),
    });
  }

  const tokenRequest = (ip: string, clientId: string, url = '/api/oauth/token') =>
    s.app.inject({
      method: 'POST',
      url,
      remoteAddress: ip,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'guessed', client_id: clientId }).toString(),
    });

  const metric = async (series: string): Promise<number> => {
    const text = (await s.app.inject({ url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };

  function expectRetryAfter(value: unknown): void {
    expect(Number(value)).toBeGreaterThanOrEqual(1);
    expect(Number(value)).toBeLessThanOrEqual(60);
  }

  it('sign-in: a limit per email from any addresses, then the form again with 429 and Retry-After', async () => {
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) expect((await signIn(`10.0.0.${i}`, 'Eve@Acme.example')).statusCode).toBe(401);
    // The same account, other case, yet another address: refused before any password check.
    const refused = await signIn('10.0.0.99', 'eve@acme.example', DEMO_PASSWORD);
    expect(refused.statusCode).toBe(429);
    expectRetryAfter(refused.headers['retry-after']);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).toMatch(/<p class="error" role="alert">Too many sign-in attempts\. Wait \d+ seconds, then try again\.<\/p>/);
    expect(refused.body).toContain('<form class="card" method="post" action="/app/sign-in">');
    // Another account from the same address signs in.
    expect((await signIn('10.0.0.99', 'manager@acme.example', DEMO_PASSWORD)).statusCode).toBe(303);
  });

  it('sign-in: a limit per address, whatever the emails; another address is unaffected', async () => {
    for (let i = 0; i < SIGN_IN_LIMITS.perIp; i++) expect((await signIn('10.1.0.1', `nobody${i}@example.com`)).statusCode).toBe(401);
    const refused = await signIn('10.1.0.1', 'admin@demo.example', DEMO_PASSWORD);
    expect(refused.statusCode).toBe(429);
    expectRetryAfter(refused.headers['retry-after']);
    expect((await signIn('10.1.0.2', 'admin@demo.example', DEMO_PASSWORD)).statusCode).toBe(303);
    expect(await metric('svc_rate_limited_total{limit="sign_in"}')).toBe(2);
  });

  // Hostile review: failures from anywhere locked the account for everyone, its owner included.
  it('sign-in: the account-wide limit spares the addresses its owner signed in from', async () => {
    expect((await signIn('10.5.0.1', 'manager@acme.example', DEMO_PASSWORD)).statusCode).toBe(303);
    // Failures from other addresses until the account-wide limit locks the account.
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) expect((await signIn(`10.6.0.${i}`, 'manager@acme.example')).statusCode).not.toBe(303);
    expect((await signIn('10.6.1.1', 'manager@acme.example', DEMO_PASSWORD)).statusCode).toBe(429);
    expect((await signIn('10.5.0.1', 'manager@acme.example', DEMO_PASSWORD)).statusCode).toBe(303);
  });

  // Hostile review: a limit per client_id alone let anyone who knows a public client's id starve its users.
  it('token: a limit per client_id from one address, then 429 with Retry-After; the client elsewhere is unaffected', async () => {
    for (let i = 0; i < TOKEN_LIMITS.perClient; i++) expect((await tokenRequest('10.2.0.1', 'client-guessed')).statusCode).not.toBe(429);
    const refused = await tokenRequest('10.2.0.1', 'client-guessed');
    expect(refused.statusCode).toBe(429);
    expectRetryAfter(refused.headers['retry-after']);
    expect(refused.json().error).toMatchObject({ code: 'rate_limited' });
    expect(refused.json().error.message).toContain('per client from this address');
    // The same client's users at other addresses, and another client at this one, are answered by the authorization server.
    expect((await tokenRequest('10.2.1.1', 'client-guessed')).statusCode).toBe(401);
    expect((await tokenRequest('10.2.0.1', 'client-other')).statusCode).toBe(401);
  });

  it('token: a limit per address, whatever the client; another address is unaffected', async () => {
    for (let i = 0; i < TOKEN_LIMITS.perIp; i++) expect((await tokenRequest('10.3.0.1', `client-${i}`)).statusCode).not.toBe(429);
    const refused = await tokenRequest('10.3.0.1', 'client-fresh');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.message).toContain('per ip');
    expect((await tokenRequest('10.3.0.2', 'client-fresh')).statusCode).toBe(401);
    // Every refusal by the server itself counted as a failed refresh; the 429s never reached it.
    expect(await metric('svc_oauth_token_requests_total{grant_type="refresh_token",outcome="error"}')).toBe(TOKEN_LIMITS.perClient + TOKEN_LIMITS.perIp + 3);
    expect(await metric('svc_rate_limited_total{limit="oauth_token"}')).toBe(2);
  });

  it('regression: no other spelling of the token or registration path reaches the provider past the limits', async () => {
    // The provider's router ignores case and a trailing slash; these once bypassed the token limits.
    for (const url of ['/api/oauth/TOKEN', '/api/oauth/token/', '/api/oauth/Token/?x=1', '/api/oauth/REGISTER']) {
      const res = await tokenRequest('10.4.0.1', 'client-spelling', url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('route_not_found');
    }
  });

  it('counts codes issued and denied at consent, and token requests by grant type and outcome', async () => {
    const registered = await discoverAndRegister(s.baseUrl);
    const allowed = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read');
    const { callback } = await authorizeInBrowser(new FormBrowser(), allowed.url, registered.redirectUri, { email: 'admin@demo.example' });
    const tokens = await exchangeCode(registered, callback, allowed, s.mcpUrl);
    const refreshed = await tokenPost(s.baseUrl, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: registered.client.client_id,
    });
    expect(refreshed.status).toBe(200);
    const denied = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read');
    await authorizeInBrowser(new FormBrowser(), denied.url, registered.redirectUri, { email: 'admin@demo.example', decision: 'deny' });

    expect(await metric('svc_oauth_grants_total{outcome="issued"}')).toBe(1);
    expect(await metric('svc_oauth_grants_total{outcome="denied"}')).toBe(1);
    expect(await metric('svc_oauth_token_requests_total{grant_type="authorization_code",outcome="ok"}')).toBe(1);
    expect(await metric('svc_oauth_token_requests_total{grant_type="refresh_token",outcome="ok"}')).toBe(1);
  });
});

describe('registration limits: per minute and per day per address', () => {
  let s: ListeningTestApp;
  let clock = new Date('2026-11-23T10:00:00Z');
  const PER_MINUTE = 4;
  const PER_DAY = 6;

  beforeAll(async () => {
    s = await startListeningApp('pglite', {
      config: { oauthRegistrationsPerMinute: PER_MINUTE, oauthRegistrationsPerDay: PER_DAY },
      core: { now: () => clock },
    });
  });
  afterAll(async () => s?.close());

  const register = (ip: string) =>
    s.app.inject({
      method: 'POST',
      url: '/api/oauth/register',
      remoteAddress: ip,
      headers: { 'content-type': 'application/json' },
      payload: { redirect_uris: ['http://127.0.0.1:53682/callback'], client_name: 'flood' },
    });

  it('refuses past the minute budget, then past the day budget once minutes pass; another address still registers', async () => {
    for (let i = 0; i < PER_MINUTE; i++) expect((await register('10.5.0.1')).statusCode).toBe(201);
    const perMinute = await register('10.5.0.1');
    expect(perMinute.statusCode).toBe(429);
    expect(perMinute.json().error.message).toContain(`allows ${PER_MINUTE} per 60 s per ip`);
    expect(Number(perMinute.headers['retry-after'])).toBeLessThanOrEqual(60);

    clock = new Date(clock.getTime() + 61_000);
    for (let i = PER_MINUTE; i < PER_DAY; i++) expect((await register('10.5.0.1')).statusCode).toBe(201);
    const perDay = await register('10.5.0.1');
    expect(perDay.statusCode).toBe(429);
    expect(perDay.json().error.message).toContain(`allows ${PER_DAY} per 86400 s per ip`);
    expect(Number(perDay.headers['retry-after'])).toBeGreaterThan(60);

    expect((await register('10.5.0.2')).statusCode).toBe(201);
  });
});
