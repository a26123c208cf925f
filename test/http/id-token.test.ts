import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_CEILING } from '../../src/access/capabilities.js';
import { setUserDisabled } from '../../src/domain/admin.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'svc-dashboard';
const KID = 'test-key-1';

let signingKey: CryptoKey;
let foreignKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  signingKey = pair.privateKey;
  foreignKey = (await generateKeyPair('RS256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  // Only loopback may be reached for real; the identity provider is played by nock.
  nock.disableNetConnect();
  nock.enableNetConnect((host) => host.startsWith('127.0.0.1') || host.startsWith('localhost'));
  nock(ISSUER)
    .persist()
    .get('/.well-known/openid-configuration')
    .reply(200, { issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` })
    .get('/jwks')
    .reply(200, { keys: [jwk] });
});

afterAll(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

interface TokenOptions {
  claims?: JWTPayload;
  issuer?: string;
  audience?: string;
  expiresAt?: number;
  key?: CryptoKey;
}

/** An ID token as the identity provider would issue it, with the given deviations. */
function idToken(email: string, options: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email, email_verified: true, ...options.claims })
    .setProtectedHeader({ alg: 'RS256', kid: KID })
    .setSubject(`sub-${email}`)
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(now - 60)
    .setExpirationTime(options.expiresAt ?? now + 300)
    .sign(options.key ?? signingKey);
}

describe.each(backends())('ID tokens [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { config: { oidcIssuer: ISSUER, oidcAudience: AUDIENCE } });
  });
  afterAll(() => t.close());

  const meWith = async (token: string) => client(t.app, undefined, { authorization: `Bearer ${token}` }).get('/v4/me');

  it('accepts a valid ID token as the user, with every capability of their role', async () => {
    const res = await meWith(await idToken(t.demo.emails.admin));
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ email: t.demo.emails.admin, role: 'admin' });
    expect(res.body.data.credential).toEqual({ kind: 'id_token', issuer: ISSUER });
    expect(res.body.data.capabilities).toEqual([...ROLE_CEILING.admin].sort());
  });

  it('grants a manager token only the manager ceiling and scope', async () => {
    const token = await idToken('Manager@Acme.example');
    const res = await meWith(token);
    expect(res.status).toBe(200);
    expect(res.body.data.capabilities).toEqual([...ROLE_CEILING.manager].sort());
    expect(res.body.data.scope.regions).toEqual(['DE']);
    const write = await client(t.app, undefined, { authorization: `Bearer ${token}` }).post('/v4/teams', { name: 'Nope' });
    expect(write.status).toBe(403);
  });

  it.each<[string, (email: string) => Promise<string>]>([
    ['the wrong audience', (email) => idToken(email, { audience: 'someone-else' })],
    ['the wrong issuer', (email) => idToken(email, { issuer: 'https://evil.example.test' })],
    ['an expired token', (email) => idToken(email, { expiresAt: Math.floor(Date.now() / 1000) - 120 })],
    ['a signature by another key', (email) => idToken(email, { key: foreignKey })],
    ['email_verified false', (email) => idToken(email, { claims: { email_verified: false } })],
    ['no email claim', (email) => idToken(email, { claims: { email: undefined } })],
  ])('refuses %s with 401 invalid_id_token', async (_case, make) => {
    const res = await meWith(await make(t.demo.emails.admin));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_id_token');
  });

  it('refuses a token that is not a JWT at all', async () => {
    const res = await meWith('not-a-jwt');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_id_token');
  });

  it('refuses a valid token for an email that matches no user', async () => {
    const res = await meWith(await idToken('stranger@acme.example'));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unknown_user');
  });

  it('refuses a disabled user, and accepts them again once re-enabled', async () => {
    const token = await idToken(t.demo.emails.manager);
    await setUserDisabled(t.core.db, t.demo.emails.manager, true);
    try {
      const res = await meWith(token);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('user_disabled');
    } finally {
      await setUserDisabled(t.core.db, t.demo.emails.manager, false);
    }
    expect((await meWith(token)).status).toBe(200);
  });

  it('still refuses an API key sent as a Bearer token', async () => {
    const res = await meWith(t.demo.apiKeys.admin);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('bearer_not_api_key');
  });
});
