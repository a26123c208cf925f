import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey, legacyKeyUsage } from '../../src/legacy/legacy-keys.js';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

/*
 * GET /v2/migration-plan: the integration owner's entry point, answered with nothing but the legacy
 * key. It is that key's own plan, and who can mint its successor; every v2 answer links to it.
 */

describe.each(backends())('the owner’s plan, read with the legacy key [%s]', (backend) => {
  let s: ListeningTestApp;
  const keys = { hr: { id: '', raw: '' }, other: { id: '', raw: '' } };

  beforeAll(async () => {
    s = await startListeningApp(backend);
    const { acme } = s.demo.companies;
    for (const [name, scopes] of [
      ['hr', ['api.employees.getAll']],
      ['other', ['api.teams.getAll']],
    ] as const) {
      const created = await createLegacyKey(s.core, s.core.mappings, { companyId: acme, name: `${name} sync`, scopes: [...scopes] });
      keys[name] = { id: created.id, raw: created.rawKey! };
    }
    expect((await v2('/v2/employees', keys.hr.raw)).status).toBe(200);
    await s.core.legacyUsage.flush();
  });
  afterAll(async () => s.close());

  const v2 = (path: string, key: string) => fetch(`${s.baseUrl}${path}`, { headers: { 'x-api-key': key } });

  it('answers the key’s own plan: its calls, stage, next step, brownouts, and the admins who mint its successor', async () => {
    const response = await v2('/v2/migration-plan', keys.hr.raw);
    expect(response.status).toBe(200);
    const plan = (await response.json()) as Record<string, any>;
    expect(plan.key).toMatchObject({ id: keys.hr.id, name: 'hr sync', scopes: ['api.employees.getAll'] });
    expect(plan.endpoints.map((e: { endpoint: string; calls: number }) => [e.endpoint, e.calls])).toEqual([['GET /v2/employees', 1]]);
    expect(plan.cutover).toMatchObject({ stage: 'v2_only', nextStep: expect.any(String) });
    expect(plan.sunset).toMatchObject({ at: '2027-01-01T00:00:00.000Z', brownouts: expect.objectContaining({ scheduled: expect.any(Array) }) });
    const [admin] = await s.core.db.query<{ name: string }>(sql`SELECT display_name AS name FROM users WHERE email = ${s.demo.emails.admin}`);
    expect(plan.ask.admins).toEqual([admin!.name]);
    expect(plan.ask.how).toContain(`svc legacy-keys mint-successor ${keys.hr.id} --capabilities mcp:employees:read`);
    // Another key's data never: its id and name appear nowhere, nor does the bridge user of either.
    const text = JSON.stringify(plan);
    expect(text).not.toContain(keys.other.id);
    expect(text).not.toContain('other sync');
    // Nor any e-mail address: a leaked v2 key must not list the admins' addresses.
    expect(text).not.toContain(s.demo.emails.admin);
  });

  it('is not v2 usage: reading it keeps a quiet key quiet', async () => {
    const before = await legacyKeyUsage(s.core, keys.other.id);
    expect((await v2('/v2/migration-plan', keys.other.raw)).status).toBe(200);
    await s.core.legacyUsage.flush();
    expect(await legacyKeyUsage(s.core, keys.other.id)).toEqual(before);
  });

  it.each([
    ['no key', '', 'missing_api_key'],
    ['an unknown key', 'lk_not_a_real_key_at_all_000000', 'invalid_api_key'],
    ['a v4 key', 'svc_sk_x', 'v4_key_on_v2'],
  ])('refuses %s with 401 in the v2 error shape', async (_case, key, code) => {
    const response = await v2('/v2/migration-plan', key);
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(code);
  });

  it('is linked from every v2 answer and from the guide', async () => {
    for (const response of [await v2('/v2/employees', keys.hr.raw), await v2('/v2/catalogs', keys.hr.raw)]) {
      expect(response.headers.get('link')).toContain('</v2/migration-plan>; rel="help"');
    }
    const guide = await (await fetch(`${s.baseUrl}/docs/migration`)).text();
    expect(guide).toContain('curl -sS "$BASE_URL/v2/migration-plan" -H "X-API-KEY: $V2_KEY"');
    expect(guide).toContain('svc legacy-keys mint-successor &lt;your key id&gt;');
    expect(((await (await fetch(`${s.baseUrl}/docs/migration.json`)).json()) as { ownerPlan: string }).ownerPlan).toBe('/v2/migration-plan');
  });
});
