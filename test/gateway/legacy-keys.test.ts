import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyHint,
  createLegacyKey,
  disableLegacyKey,
  importLegacyKeys,
  legacyKeyUsage,
  listLegacyKeys,
  resolveLegacyKey,
} from '../../src/legacy/legacy-keys.js';
import { UsageRecorder } from '../../src/legacy/legacy-key-usage.js';
import { capabilitiesForScopes, loadMappings } from '../../src/legacy/mappings.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

const mappings = loadMappings(fileURLToPath(new URL('../../mappings', import.meta.url)));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function activeBridgeKey(t: TestApp, rawKey: string): Promise<string> {
  const resolved = await resolveLegacyKey(t.core, rawKey);
  if (resolved.status !== 'active' || !resolved.bridgeApiKey) throw new Error(`expected an active bridged key, got ${resolved.status}`);
  return resolved.bridgeApiKey;
}

describe('legacy key hints', () => {
  it('show at most an eighth of a key and 8 characters, so a short imported key keeps its secret', () => {
    expect(keyHint('abcdefg')).toBe('…');
    expect(keyHint('abcdefgh12345678')).toBe('ab…');
    expect(keyHint('x'.repeat(200))).toBe(`${'x'.repeat(8)}…`);
    for (let length = 1; length <= 80; length++) {
      const shown = keyHint('k'.repeat(length)).length - 1;
      expect(shown, `length ${length}`).toBeLessThanOrEqual(length / 8);
    }
  });
});

describe.each(backends())('legacy keys [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  it('provisions a non-personal bridge user of that company only, with a key of exactly the mapped capabilities', async () => {
    const scopes = ['api.employees.getAll', 'api.employee.deliveryAddress.update', 'api.teams.getAll'];
    const expected = [...capabilitiesForScopes(mappings, scopes)].sort();
    expect(expected).toEqual(['mcp:employees:read', 'mcp:employees:write', 'mcp:teams:read']);
    const created = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'HR sync',
      scopes: [...scopes, 'api.employees.getAll'],
    });
    expect(created.rawKey).toMatch(/^lk_live_[A-Za-z0-9_-]{40}$/);
    expect(created).toMatchObject({
      companyId: t.demo.companies.acme,
      name: 'HR sync',
      scopes,
      keyHint: `${created.rawKey!.slice(0, 6)}…`,
      disabledAt: null,
    });
    expect([...created.capabilities].sort()).toEqual(expected);

    const bridgeKey = await activeBridgeKey(t, created.rawKey!);
    const me = await client(t.app, bridgeKey).get('/v4/me');
    expect(me.status).toBe(200);
    expect([...me.body.data.capabilities].sort()).toEqual(expected);
    expect(me.body.data.user).toMatchObject({
      id: created.bridgeUserId,
      email: `v2-bridge+${created.id}@co-acme.invalid`,
      displayName: 'v2 bridge: HR sync',
      role: 'admin',
    });
    expect(me.body.data.companies.map((c: { id: string }) => c.id)).toEqual([t.demo.companies.acme]);
    expect(me.body.data.credential.keyId).toBe(created.bridgeKeyId);
    const [user] = await t.core.db.query<{ non_personal: boolean }>(sql`SELECT non_personal FROM users WHERE id = ${created.bridgeUserId}`);
    expect(user!.non_personal).toBe(true);

    const legacyOnV4 = await client(t.app, created.rawKey).get('/v4/me');
    expect(legacyOnV4.status).toBe(401);
    expect(legacyOnV4.body.error.code).toBe('api_key_not_user_bound');
  });

  it('stores only a hash of the legacy key and a sealed bridge key', async () => {
    const created = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.globex,
      name: 'Sealed',
      scopes: ['api.orders.getAll'],
    });
    expect(created.capabilities).toEqual(['mcp:orders:read']);
    const bridgeKey = await activeBridgeKey(t, created.rawKey!);
    expect((await client(t.app, bridgeKey).get('/v4/me')).body.data.capabilities).toEqual(['mcp:orders:read']);
    const [row] = await t.core.db.query<Record<string, unknown>>(sql`SELECT * FROM legacy_keys WHERE id = ${created.id}`);
    expect(row!.key_hash).toBe(sha256(created.rawKey!));
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(created.rawKey!);
    expect(stored).not.toContain(bridgeKey);
    const listed = JSON.stringify(await listLegacyKeys(t.core));
    expect(listed).not.toContain(created.rawKey!);
    expect(listed).not.toContain(String(row!.key_hash));
    expect(listed).not.toContain('bridge_key_ciphertext');
  });

  it('imports existing v2 keys of any shape, all or nothing, and refuses duplicates', async () => {
    const rawKey = 'acme-v2-Zx81.k3y/legacy';
    const result = await importLegacyKeys(t.core, mappings, [
      { company: t.demo.companies.acme, name: 'Imported', key: rawKey, scopes: ['api.products.getAll'] },
    ]);
    expect(result.imported).toBe(1);
    expect(result.keys[0]).not.toHaveProperty('rawKey');
    // 23 characters: the hint shows an eighth of them, 2 (once it showed 5, nearly a quarter).
    expect(result.keys[0]!.keyHint).toBe('ac…');
    const resolved = await resolveLegacyKey(t.core, rawKey);
    expect(resolved).toMatchObject({
      status: 'active',
      legacyKeyId: result.keys[0]!.id,
      companyId: t.demo.companies.acme,
      scopes: ['api.products.getAll'],
    });
    expect(await resolveLegacyKey(t.core, `${rawKey}x`)).toEqual({ status: 'unknown' });

    const before = (await listLegacyKeys(t.core)).length;
    const again = importLegacyKeys(t.core, mappings, [
      { company: t.demo.companies.acme, name: 'Fresh', key: 'another-key-0001', scopes: ['api.teams.getAll'] },
      { company: t.demo.companies.acme, name: 'Again', key: rawKey, scopes: ['api.teams.getAll'] },
    ]);
    await expect(again).rejects.toMatchObject({ status: 409, code: 'legacy_key_exists', message: expect.stringContaining('Entry 2 ("Again")') });
    // The whole file rolled back: the first entry was not kept either.
    expect(await listLegacyKeys(t.core)).toHaveLength(before);
    expect(await resolveLegacyKey(t.core, 'another-key-0001')).toEqual({ status: 'unknown' });

    const inFile = importLegacyKeys(t.core, mappings, [
      { company: t.demo.companies.acme, name: 'One', key: 'same-key-in-file', scopes: ['api.teams.getAll'] },
      { company: t.demo.companies.globex, name: 'Two', key: 'same-key-in-file', scopes: ['api.teams.getAll'] },
    ]);
    await expect(inFile).rejects.toMatchObject({ status: 409, code: 'legacy_key_exists' });
  });

  it('names the field and the rule for bad input', async () => {
    const acme = t.demo.companies.acme;
    await expect(createLegacyKey(t.core, mappings, { companyId: acme, name: 'Typo', scopes: ['api.employees.getall'] })).rejects.toMatchObject({
      status: 400,
      code: 'unknown_scope',
      message: 'unknown v2 scope api.employees.getall (did you mean api.employees.getAll?)',
      details: [{ field: 'scopes', rule: 'known_scope' }],
    });
    await expect(createLegacyKey(t.core, mappings, { companyId: acme, name: 'None', scopes: [] })).rejects.toMatchObject({
      status: 400,
      details: [{ field: 'scopes', rule: 'too_small' }],
    });
    await expect(
      createLegacyKey(t.core, mappings, { companyId: acme, name: 'v4', scopes: ['api.teams.getAll'], rawKey: 'svc_sk_abcdefgh_xyz' }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'rawKey', rule: 'not_v4_key' }] });
    await expect(
      createLegacyKey(t.core, mappings, { companyId: acme, name: 'Short', scopes: ['api.teams.getAll'], rawKey: 'short' }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'rawKey', rule: 'invalid_format' }] });
    await expect(createLegacyKey(t.core, mappings, { companyId: 'co_nope', name: 'Ghost', scopes: ['api.teams.getAll'] })).rejects.toMatchObject({
      status: 404,
      message: 'Company co_nope was not found',
    });
    await expect(importLegacyKeys(t.core, mappings, [{ company: acme, name: 'X', key: 'abcdefghij', scopes: ['api.teams.getAll'], extra: 1 }])).rejects.toMatchObject({
      status: 400,
      details: [{ field: '0.extra', rule: 'unknown_field' }],
    });
  });

  it('registers a key whose scopes all stay on v2 without minting a bridge key', async () => {
    const created = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'Catalog reader',
      scopes: ['api.catalogs.getAll', 'api.company.get', 'api.organization.users.getAll'],
    });
    expect(created).toMatchObject({ bridgeKeyId: null, capabilities: [] });
    expect(await resolveLegacyKey(t.core, created.rawKey!)).toMatchObject({ status: 'active', bridgeApiKey: null });
  });

  it('disables the legacy key and revokes its bridge key from the next request on', async () => {
    const created = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'To retire',
      scopes: ['api.teams.getAll'],
    });
    const bridgeKey = await activeBridgeKey(t, created.rawKey!);
    expect((await client(t.app, bridgeKey).get('/v4/me')).status).toBe(200);

    const disabled = await disableLegacyKey(t.core, created.id);
    expect(disabled.disabledAt).not.toBeNull();
    expect(await resolveLegacyKey(t.core, created.rawKey!)).toEqual({ status: 'disabled', legacyKeyId: created.id });
    const refused = await client(t.app, bridgeKey).get('/v4/me');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');

    await expect(disableLegacyKey(t.core, created.id)).rejects.toMatchObject({ status: 409, code: 'legacy_key_disabled' });
    await expect(disableLegacyKey(t.core, 'lk_missing')).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the bridge principal between v2 calls only until the bridge changes: the next call is refused', async () => {
    const created = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'Kept bridge', scopes: ['api.teams.getAll'] });
    const v2 = client(t.app, created.rawKey!);
    // The second call is served with the principal kept from the first.
    for (let i = 0; i < 2; i++) expect((await v2.get('/v2/teams')).status).toBe(200);
    await t.core.db.query(sql`UPDATE users SET disabled_at = now() WHERE id = ${created.bridgeUserId}`);
    const disabledUser = await v2.get('/v2/teams');
    expect(disabledUser.status).toBe(401);
    expect(disabledUser.body.error.code).toBe('user_disabled');

    await t.core.db.query(sql`UPDATE users SET disabled_at = NULL WHERE id = ${created.bridgeUserId}`);
    expect((await v2.get('/v2/teams')).status).toBe(200);
    await t.core.db.query(sql`UPDATE api_keys SET capabilities = '{}' WHERE id = ${created.bridgeKeyId}`);
    const narrowed = await v2.get('/v2/teams');
    expect(narrowed.status).toBe(403);
    expect(narrowed.body.error.code).toBe('missing_capability');
  });

  it('lists keys by company', async () => {
    const globex = await listLegacyKeys(t.core, { companyIds: [t.demo.companies.globex] });
    expect(globex.length).toBeGreaterThan(0);
    expect(globex.every((k) => k.companyId === t.demo.companies.globex)).toBe(true);
    expect((await listLegacyKeys(t.core)).length).toBeGreaterThan(globex.length);
  });

  it('counts calls per key, UTC day and endpoint, and keeps the last use', async () => {
    const { id } = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'Busy', scopes: ['api.teams.getAll'] });
    const day1 = new Date('2026-11-20T23:59:00Z');
    const day2 = new Date('2026-11-21T00:01:00Z');
    const usage = t.core.legacyUsage;
    usage.record(id, 'GET /teams', 'api.teams.getAll', day1);
    usage.record(id, 'GET /teams', 'api.teams.getAll', new Date('2026-11-20T10:00:00Z'));
    // Counts add up across flushes, not only within one.
    await usage.flush();
    usage.record(id, 'GET /teams', 'api.teams.getAll', day2);
    // A call stamped before the last one still counts on its own day.
    usage.record(id, 'GET /teams/:teamId', 'api.team.get', day1);
    usage.record('lk_missing', 'GET /teams', 'api.teams.getAll', day2);

    expect(await legacyKeyUsage(t.core, id)).toEqual([
      { day: '2026-11-20', endpoint: 'GET /teams', scope: 'api.teams.getAll', calls: 2 },
      { day: '2026-11-20', endpoint: 'GET /teams/:teamId', scope: 'api.team.get', calls: 1 },
      { day: '2026-11-21', endpoint: 'GET /teams', scope: 'api.teams.getAll', calls: 1 },
    ]);
    expect(await legacyKeyUsage(t.core, 'lk_missing')).toEqual([]);
    const [listed] = await listLegacyKeys(t.core, { id });
    expect(listed!.lastUsedAt).toBe(day2.toISOString());
  });

  it('keeps the counts of a failed write for the next flush', async () => {
    const { id } = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'Flaky', scopes: ['api.teams.getAll'] });
    let failNext = true;
    const flakyDb = {
      query: <R,>(statement: Parameters<typeof t.core.db.query>[0]) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('connection lost'));
        }
        return t.core.db.query<R>(statement);
      },
    };
    const errors: unknown[] = [];
    const recorder = new UsageRecorder(flakyDb, (error) => errors.push(error), 60_000);
    const at = new Date('2026-11-20T10:00:00Z');
    recorder.record(id, 'GET /teams', 'api.teams.getAll', at);
    recorder.record(id, 'GET /teams', 'api.teams.getAll', at);
    await recorder.flush();
    expect(errors).toHaveLength(1);
    expect(await legacyKeyUsage(t.core, id)).toEqual([]);
    recorder.record(id, 'GET /teams', 'api.teams.getAll', at);
    await recorder.close();
    expect(await legacyKeyUsage(t.core, id)).toEqual([{ day: '2026-11-20', endpoint: 'GET /teams', scope: 'api.teams.getAll', calls: 3 }]);
  });
});
