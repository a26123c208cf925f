import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApiKey } from '../../src/access/api-keys.js';
import { NOT_USER_BOUND_MESSAGE } from '../../src/access/authenticate.js';
import { ROLE_CEILING } from '../../src/access/capabilities.js';
import { createUser, mintKeyForUser, revokeKey, setKeyCapabilities, setUserDisabled } from '../../src/domain/admin.js';
import { AppError } from '../../src/kit/errors.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

const LEGACY_KEY = 'v2_live_abc123';

describe.each(backends())('authentication [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  const rawGet = (headers: Record<string, string | string[]>, url = '/v4/me') =>
    t.app.inject({ method: 'GET', url, headers });

  describe('credentials', () => {
    it('answers 401 unauthenticated without a credential', async () => {
      const res = await client(t.app).get('/v4/me');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthenticated');
    });

    it('answers 401 invalid_api_key to a malformed or unknown svc_sk_ key', async () => {
      const malformed = await client(t.app, 'svc_sk_short').get('/v4/me');
      expect(malformed.status).toBe(401);
      expect(malformed.body.error.code).toBe('invalid_api_key');
      const unknown = await client(t.app, `svc_sk_zzzzzzzz_${'A'.repeat(43)}`).get('/v4/me');
      expect(unknown.status).toBe(401);
      expect(unknown.body.error.code).toBe('invalid_api_key');
      const { keyId } = parseApiKey(t.demo.apiKeys.admin)!;
      const wrongSecret = await client(t.app, `svc_sk_${keyId}_${'B'.repeat(43)}`).get('/v4/me');
      expect(wrongSecret.status).toBe(401);
      expect(wrongSecret.body.error.code).toBe('invalid_api_key');
    });

    it.each([
      ['GET', '/v4/me'],
      ['GET', '/v4/employees'],
      ['GET', '/v4/teams'],
      ['POST', '/v4/teams'],
      // Refused before routing: the MCP endpoint and the OAuth token endpoint alike.
      ['POST', '/mcp'],
      ['POST', '/api/oauth/token'],
    ] as const)('rejects a legacy v2 key on %s %s: not bound to a user', async (method, url) => {
      const api = client(t.app, LEGACY_KEY);
      const res = method === 'GET' ? await api.get(url) : await api.post(url, { name: 'Legacy' });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('api_key_not_user_bound');
      expect(res.body.error.message).toBe(NOT_USER_BOUND_MESSAGE);
      expect(res.body.error.message).toMatch(/API key is not bound to a user/);
    });

    it('refuses X-API-KEY sent twice', async () => {
      const key = t.demo.apiKeys.admin;
      const res = await rawGet({ 'x-api-key': [key, key] });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('ambiguous_credentials');
    });

    it('refuses X-API-KEY sent twice over a real socket (Node joins the two lines)', async () => {
      const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
      const key = t.demo.apiKeys.admin;
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(new URL('/v4/me', base), (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.setHeader('x-api-key', [key, key]);
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(401);
      expect(JSON.parse(body).error.code).toBe('ambiguous_credentials');
    });

    it('refuses X-API-KEY together with Authorization', async () => {
      const res = await rawGet({ 'x-api-key': t.demo.apiKeys.admin, authorization: 'Bearer some.id.token' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('ambiguous_credentials');
    });

    it('refuses an API key sent as a Bearer token', async () => {
      const res = await rawGet({ authorization: `Bearer ${t.demo.apiKeys.admin}` });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('bearer_not_api_key');
    });

    it('refuses a Bearer ID token when no identity provider is configured', async () => {
      const res = await rawGet({ authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('id_token_not_accepted');
    });
  });

  describe('live checks on every request', () => {
    it('stops a revoked key on the very next request', async () => {
      const minted = await mintKeyForUser(t.core.db, t.demo.emails.admin, ['mcp:teams:read']);
      const api = client(t.app, minted.rawKey);
      expect((await api.get('/v4/teams')).status).toBe(200);
      await revokeKey(t.core.db, minted.keyId);
      const after = await api.get('/v4/teams');
      expect(after.status).toBe(401);
      expect(after.body.error.code).toBe('invalid_api_key');
    });

    it('stops every key of a disabled user, and re-enabling restores them', async () => {
      const api = client(t.app, t.demo.apiKeys.manager);
      expect((await api.get('/v4/me')).status).toBe(200);
      await setUserDisabled(t.core.db, t.demo.emails.manager, true);
      try {
        const disabled = await api.get('/v4/me');
        expect(disabled.status).toBe(401);
        expect(disabled.body.error.code).toBe('user_disabled');
      } finally {
        await setUserDisabled(t.core.db, t.demo.emails.manager, false);
      }
      expect((await api.get('/v4/me')).status).toBe(200);
    });

    it('applies narrowed key capabilities on the next call', async () => {
      const minted = await mintKeyForUser(t.core.db, t.demo.emails.admin, ['mcp:teams:read', 'mcp:company:read']);
      const api = client(t.app, minted.rawKey);
      expect((await api.get('/v4/teams')).status).toBe(200);
      await setKeyCapabilities(t.core.db, minted.keyId, ['mcp:company:read']);
      const after = await api.get('/v4/teams');
      expect(after.status).toBe(403);
      expect(after.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:teams:read' } });
    });

    it("follows a change to the user's scope on the next call (the key's principal is cached)", async () => {
      const api = client(t.app, t.demo.apiKeys.manager);
      expect((await api.get('/v4/me')).body.data.scope.regions).toEqual(['DE']);
      await t.core.db.query(sql`INSERT INTO manager_regions (user_id, country) VALUES (${t.demo.users.manager}, 'FR')`);
      try {
        expect((await api.get('/v4/me')).body.data.scope.regions).toEqual(['DE', 'FR']);
      } finally {
        await t.core.db.query(sql`DELETE FROM manager_regions WHERE user_id = ${t.demo.users.manager} AND country = 'FR'`);
      }
      expect((await api.get('/v4/me')).body.data.scope.regions).toEqual(['DE']);
    });

    it('treats capabilities as flat: teams:write alone cannot read teams', async () => {
      const writeOnly = await keyWith(t, 'admin', ['mcp:teams:write']);
      const res = await client(t.app, writeOnly).get('/v4/teams');
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('missing_capability');
    });
  });

  describe('role ceiling', () => {
    it('refuses to mint a manager key with mcp:teams:write', async () => {
      const attempt = mintKeyForUser(t.core.db, t.demo.emails.manager, ['mcp:teams:read', 'mcp:teams:write']);
      await expect(attempt).rejects.toBeInstanceOf(AppError);
      await expect(attempt).rejects.toMatchObject({ code: 'capability_beyond_role' });
    });

    it('narrows an existing admin key at once when the user is demoted to employee', async () => {
      const email = 'demoted@acme.example';
      await createUser(t.core.db, { email, displayName: 'Soon Demoted', role: 'admin', companyIds: [t.demo.companies.acme] });
      const minted = await mintKeyForUser(t.core.db, email, ROLE_CEILING.admin);
      const api = client(t.app, minted.rawKey);
      expect((await api.get('/v4/me')).body.data.capabilities).toHaveLength(ROLE_CEILING.admin.length);
      expect((await api.get('/v4/teams')).status).toBe(200);

      await t.core.db.query(sql`UPDATE users SET role = 'employee' WHERE lower(email) = ${email}`);
      const me = await api.get('/v4/me');
      expect(me.status).toBe(200);
      expect(me.body.data.user.role).toBe('employee');
      expect(me.body.data.capabilities).toEqual([...ROLE_CEILING.employee].sort());
      expect((await api.get('/v4/teams')).status).toBe(403);
    });
  });

  describe('GET /v4/me', () => {
    it('needs no capability and describes user, companies, scope and the masked key', async () => {
      const minted = await mintKeyForUser(t.core.db, t.demo.emails.manager, ['mcp:company:read']);
      const res = await t.app.inject({ method: 'GET', url: '/v4/me', headers: { 'x-api-key': minted.rawKey } });
      expect(res.statusCode).toBe(200);
      const { data } = res.json();
      expect(data.user).toMatchObject({ email: t.demo.emails.manager, role: 'manager', id: t.demo.users.manager });
      expect(data.companies).toEqual([{ id: t.demo.companies.acme, name: 'Acme Corp' }]);
      expect(data.scope).toEqual({ teams: [{ id: t.demo.teams.engineering, name: 'Engineering' }], regions: ['DE'] });
      expect(data.capabilities).toEqual(['mcp:company:read']);
      expect(data.credential).toMatchObject({ kind: 'api_key', keyId: minted.keyId });
      expect(data.credential.key).toMatch(new RegExp(`^svc_sk_${minted.keyId}_`));
      const { secret } = parseApiKey(minted.rawKey)!;
      expect(res.body).not.toContain(secret);
      expect(res.body).not.toContain(minted.rawKey);
    });

    it('shows an admin both companies and no manager scope', async () => {
      const res = await client(t.app, t.demo.apiKeys.admin).get('/v4/me');
      expect(res.body.data.companies.map((c: { id: string }) => c.id)).toEqual([t.demo.companies.acme, t.demo.companies.globex]);
      expect(res.body.data.scope).toEqual({ teams: [], regions: [] });
      expect(res.body.data.capabilities).toEqual([...ROLE_CEILING.admin].sort());
    });
  });

  it('stores only a SHA-256 hash of each key secret', async () => {
    const rawKey = t.demo.apiKeys.admin;
    const { keyId, secret } = parseApiKey(rawKey)!;
    const [row] = await t.core.db.query<{ secret_hash: string }>(sql`SELECT secret_hash FROM api_keys WHERE id = ${keyId}`);
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.secret_hash).not.toBe(rawKey);
    expect(row!.secret_hash).not.toBe(secret);
    expect(row!.secret_hash).not.toContain(secret);
  });

  describe('error envelope', () => {
    it('has ok, error {code, message}, meta.requestId and an x-request-id header', async () => {
      const res = await rawGet({});
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'meta', 'ok']);
      expect(body.ok).toBe(false);
      expect(body.error).toEqual({ code: 'unauthenticated', message: expect.any(String) });
      expect(body.meta.requestId).toEqual(expect.any(String));
      expect(res.headers['x-request-id']).toBe(body.meta.requestId);
    });

    it('echoes an incoming x-request-id', async () => {
      const res = await rawGet({ 'x-request-id': 'trace-abc.123' });
      expect(res.headers['x-request-id']).toBe('trace-abc.123');
      expect(res.json().meta.requestId).toBe('trace-abc.123');
    });

    it('answers 404 route_not_found to an unknown route', async () => {
      const res = await client(t.app, t.demo.apiKeys.admin).get('/v4/nothing-here');
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('route_not_found');
      expect(res.body.meta.requestId).toBeTruthy();
    });

    it('answers 400 invalid_json to a body that is not JSON', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v4/teams',
        headers: { 'x-api-key': t.demo.apiKeys.admin, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('invalid_json');
    });

    it('answers 400 invalid_body to a JSON array body', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v4/teams',
        headers: { 'x-api-key': t.demo.apiKeys.admin, 'content-type': 'application/json' },
        payload: JSON.stringify([{ name: 'Array' }]),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('invalid_body');
    });
  });
});
