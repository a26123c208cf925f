import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
import { createCompany, createUser, mintKeyForUser, revokeKey } from '../../src/domain/admin.js';
import { autoDisableQuietKeys } from '../../src/migration/cutover.js';
import { createLegacyKey, disableLegacyKey } from '../../src/legacy/legacy-keys.js';
import { defaultMappingsDir, loadMappings, type Mappings } from '../../src/legacy/mappings.js';
import type { MigrationReport } from '../../src/migration/migration-report.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startListeningApp, TEST_SECRET_KEY, type ListeningTestApp } from '../helpers/harness.js';
import { csrfOf, FormBrowser } from '../oauth/support.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';

/*
 * The cutover of a legacy key, walked as an admin and an integration would on a moved clock: v2 only,
 * successor minted (from the running service), observed working, v2 quiet, disabled; each step seen
 * in the admin API, the keys-per-stage gauge, the dashboard and its JSON. Then the automatic policy,
 * on and off. And the same walk through the built svc.
 */

const DAY_MS = 86_400_000;
const START = new Date('2026-11-02T09:00:00Z');
const ADDRESS_SCOPES = ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.update'];

/** The service's clock, moved by the test. */
class Clock {
  at = START;
  readonly now = () => this.at;
  advance(days: number): void {
    this.at = new Date(this.at.getTime() + days * DAY_MS);
  }
}

/** The maps with the cutover settings changed. */
const withCutover = (mappings: Mappings, cutover: Partial<Mappings['sunset']['cutover']>): Mappings => ({
  ...mappings,
  sunset: { ...mappings.sunset, cutover: { ...mappings.sunset.cutover, ...cutover } },
});

/** The keys-per-stage gauge as /metrics shows it. */
async function stageGauge(s: ListeningTestApp): Promise<Record<string, number>> {
  const text = await (await fetch(`${s.baseUrl}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^svc_legacy_keys_by_stage\{stage="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

const gaugeWith = (stage: string) => ({ v2_only: 0, successor_minted: 0, successor_working: 0, v2_unmovable_only: 0, v2_quiet: 0, v2_disabled: 0, [stage]: 1 });

/** The end of every legacy_key_in_use message: what overrides the refusal. */
const FORCE_HINT = 'Disabling it would cut off an integration that may still be live; to disable it anyway, force it with a reason (force: true and reason; svc: --force --reason)';

/** Markup as the reader sees it: tags dropped, entities decoded, spaces collapsed. */
const textOf = (markup: string) =>
  markup.replace(/<[^>]+>/g, ' ').replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c))).replace(/\s+/g, ' ').trim();

/** The cutover table's row of one key: its stage cell and the rest as text. */
function cutoverRow(page: string, keyId: string): { stage: string; text: string } {
  const table = /<table id="cutover">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
  const row = [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => m[1]!).find((r) => r.includes(keyId));
  if (!row) throw new Error(`no cutover row for ${keyId}`);
  return { stage: /data-stage="(\w+)"/.exec(row)![1]!, text: textOf(row) };
}

/** Reads a key's stage everywhere it shows: the admin API, the gauge, the JSON report and the page. */
function stageProbe(app: () => ListeningTestApp) {
  const readKey = async (id: string) => {
    const answer = await client(app().app, app().demo.apiKeys.admin).get(`/v4/admin/legacy-keys/${id}`);
    expect(answer.status).toBe(200);
    return answer.body.data.key as { cutover: MigrationReport['keys'][number]['cutover'] };
  };
  /** The report as automation reads it: with the admin's API key, no session. */
  const reportJson = async () => {
    const response = await fetch(`${app().baseUrl}/app/migration.json`, { headers: { 'x-api-key': app().demo.apiKeys.admin } });
    expect(response.status).toBe(200);
    return (await response.json()) as MigrationReport;
  };
  /** A fresh page session (the moved clock may have ended the last one). */
  const dashboard = async () => {
    const browser = new FormBrowser();
    expect((await browser.signIn(app().baseUrl, app().demo.emails.admin)).status).toBe(303);
    const response = await browser.fetch(`${app().baseUrl}/app/migration`);
    expect(response.status).toBe(200);
    return { browser, page: await response.text() };
  };
  /** The stage of the key (the only legacy key of the app) everywhere it shows. */
  const expectStage = async (id: string, stage: string) => {
    const { cutover } = await readKey(id);
    expect(cutover.stage).toBe(stage);
    expect(await stageGauge(app())).toEqual(gaugeWith(stage));
    const report = await reportJson();
    expect(report.keys.find((k) => k.id === id)?.cutover).toEqual(cutover);
    expect(report.cutover.keysByStage).toEqual(gaugeWith(stage));
    const { page } = await dashboard();
    expect(cutoverRow(page, id).stage).toBe(stage);
    return { cutover, page };
  };
  return { readKey, reportJson, dashboard, expectStage };
}

describe.each(backends())('legacy key cutover [%s]', (backend) => {
  const clock = new Clock();
  let s: ListeningTestApp;
  let admin: ReturnType<typeof client>;
  let employeeId: string;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: clock.now } });
    admin = client(s.app, s.demo.apiKeys.admin);
    employeeId = s.demo.employees.dana;
  });
  afterAll(async () => s?.close());

  const register = async (name: string, scopes = ADDRESS_SCOPES, companyId = s.demo.companies.acme) =>
    createLegacyKey(s.core, s.core.mappings, { companyId, name, scopes });
  const callV2 = (rawKey: string) => s.app.inject({ method: 'GET', url: `/v2/employees/${employeeId}/deliveryAddress`, headers: { 'x-api-key': rawKey } });
  const { readKey, reportJson, dashboard, expectStage } = stageProbe(() => s);

  it('walks a demo integration from v2 only to disabled: mint on the page, first v4 call, quiet, disable through the API', async () => {
    clock.at = START;
    const legacy = await register('Demo v2 address sync');
    expect((await callV2(legacy.rawKey!)).statusCode).toBe(200);

    // v2 only: the page offers the successor with what the key called; the scope it never called is left unticked.
    let { cutover, page } = await expectStage(legacy.id, 'v2_only');
    expect(cutover).toMatchObject({ successor: null, disabled: null, quietSince: '2026-11-02T09:00:00.000Z', quietFrom: '2026-11-16T09:00:00.000Z', nextStep: 'Mint its successor v4 key for the integration' });
    expect(cutover.stages.map((st) => st.at)).toEqual(['2026-11-02T09:00:00.000Z', null, null, null, null, null]);
    expect(page).toMatch(new RegExp(`action="/app/migration/keys/${legacy.id}/successor"`));
    expect(page).toContain('<input type="checkbox" name="capabilities" value="mcp:employees:read" checked>');
    expect(page).toContain('<input type="checkbox" name="capabilities" value="mcp:employees:write">');
    // Disabling now would cut off the integration: refused, naming the stage and what is missing.
    const early = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, {});
    expect([early.status, early.body.error.code]).toEqual([409, 'legacy_key_in_use']);
    expect(early.body.error.message).toBe(
      `Legacy key ${legacy.id} ("Demo v2 address sync") is at stage v2_only, not v2_quiet: it has no successor v4 key; v2 was called with it less than a minute ago, so it is quiet only on 2026-11-16 (after 14 days without a v2 call). ${FORCE_HINT}`,
    );
    expect(early.body.error.details).toMatchObject({ stage: 'v2_only', quietFrom: '2026-11-16T09:00:00.000Z' });

    // Day 1: an admin mints the successor on the dashboard; it is shown once.
    clock.advance(1);
    const signedIn = await dashboard();
    const minted = await signedIn.browser.fetch(`${s.baseUrl}/app/migration/keys/${legacy.id}/successor`, {
      form: { _csrf: csrfOf(signedIn.page), capabilities: ['mcp:employees:read'] },
    });
    expect(minted.status).toBe(201);
    const mintedPage = await minted.text();
    const successorKey = /data-testid="successor-key">([^<]+)</.exec(mintedPage)?.[1];
    expect(successorKey).toMatch(/^svc_sk_[0-9a-z]{8}_/);
    expect(mintedPage).toContain(`v4-successor+${legacy.id}@co-acme.invalid`);
    ({ cutover, page } = await expectStage(legacy.id, 'successor_minted'));
    expect(page).not.toContain(successorKey!);
    expect(cutover.successor).toMatchObject({ capabilities: ['mcp:employees:read'], mintedAt: '2026-11-03T09:00:00.000Z', firstUsedAt: null, active: true });
    expect(cutoverRow(page, legacy.id).text).toContain('v2 only 2026-11-02 · successor minted 2026-11-03');

    // Day 2: a refused v4 call is not "working", nor is a first success needing no capability; one needing what v2 called is.
    clock.advance(1);
    expect((await client(s.app, successorKey).get('/v4/teams')).status).toBe(403);
    expect((await readKey(legacy.id)).cutover.stage).toBe('successor_minted');
    const me = await client(s.app, successorKey).get('/v4/me');
    expect(me.status).toBe(200);
    expect(me.body.data.user).toMatchObject({ email: `v4-successor+${legacy.id}@co-acme.invalid`, role: 'admin', displayName: 'Demo v2 address sync (v4)' });
    expect((await readKey(legacy.id)).cutover.stage).toBe('successor_minted');
    clock.advance(1);
    expect((await client(s.app, successorKey).get(`/v4/employees/${employeeId}`)).status).toBe(200);
    ({ cutover } = await expectStage(legacy.id, 'successor_working'));
    expect(cutover.successor).toMatchObject({ firstUsedAt: '2026-11-04T09:00:00.000Z', exercised: [{ capability: 'mcp:employees:read', at: '2026-11-05T09:00:00.000Z' }] });

    // Day 5: the integration still calls v2 once; quiet counts from there.
    clock.advance(2);
    expect((await callV2(legacy.rawKey!)).statusCode).toBe(200);
    clock.advance(13);
    ({ cutover } = await expectStage(legacy.id, 'successor_working'));
    expect(cutover.quietFrom).toBe('2026-11-21T09:00:00.000Z');
    expect(cutover.nextStep).toBe('Move the remaining calls to v4: with no further v2 call, the key is quiet on 2026-11-21');
    // The successor works, but v2 is not quiet yet: still refused; a force needs a reason.
    const notQuiet = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, {});
    expect([notQuiet.status, notQuiet.body.error.message]).toEqual([
      409,
      `Legacy key ${legacy.id} ("Demo v2 address sync") is at stage successor_working, not v2_quiet: v2 was called with it 13 days ago, so it is quiet only on 2026-11-21 (after 14 days without a v2 call). ${FORCE_HINT}`,
    ]);
    const forceWithoutReason = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, { force: true });
    expect(forceWithoutReason.status).toBe(400);
    expect(forceWithoutReason.body.error).toMatchObject({
      code: 'validation_failed',
      details: [{ field: 'reason', rule: 'required_with_force', message: 'required when force is true: say why the key is disabled before its cutover is done' }],
    });
    expect((await readKey(legacy.id)).cutover.stage).toBe('successor_working');

    // Day 19: quiet for 14 days. The policy is off: the key waits for an admin.
    clock.advance(1);
    ({ cutover, page } = await expectStage(legacy.id, 'v2_quiet'));
    expect(cutover.stages.find((st) => st.stage === 'v2_quiet')?.at).toBe('2026-11-21T09:00:00.000Z');
    expect(cutover.nextStep).toBe('Disable the legacy key: its successor works and v2 is quiet');
    expect(page).toContain(`action="/app/migration/keys/${legacy.id}/disable"`);
    expect(await autoDisableQuietKeys(s.core)).toEqual([]);
    expect((await readKey(legacy.id)).cutover.stage).toBe('v2_quiet');

    // Day 20: the admin disables it through the API; v2 refuses the key at once, the successor works on.
    clock.advance(1);
    const disabled = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, { reason: 'moved to v4, ticket OPS-12' });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data.key.cutover.disabled).toEqual({ at: '2026-11-22T09:00:00.000Z', by: 'admin', reason: 'moved to v4, ticket OPS-12' });
    expect((await callV2(legacy.rawKey!)).json()).toMatchObject({ error: { status: 401, code: 'legacy_key_disabled' } });
    expect((await client(s.app, successorKey).get('/v4/me')).status).toBe(200);
    ({ cutover, page } = await expectStage(legacy.id, 'v2_disabled'));
    expect(cutover.nextStep).toBeNull();
    expect(cutover.stages.map((st) => st.at?.slice(0, 10) ?? null)).toEqual(['2026-11-02', '2026-11-03', '2026-11-05', null, '2026-11-21', '2026-11-22']);
    expect(cutoverRow(page, legacy.id).text).toContain('Disabled 2026-11-22 09:00 UTC by an admin: moved to v4, ticket OPS-12');
    expect((await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, {})).body.error.code).toBe('legacy_key_disabled');
  });

  it('mints through the API with the least capabilities, refuses what it must, and replaces a successor on request', async () => {
    clock.advance(1);
    const legacy = await register('HR sync', ['api.employees.getAll', 'api.employee.deliveryAddress.update', 'api.teams.getAll']);
    const mint = (body: object, as = admin) => as.post(`/v4/admin/legacy-keys/${legacy.id}/successor`, body);

    // Nothing called yet: nothing to infer.
    expect((await mint({})).body.error).toMatchObject({ code: 'capabilities_required', details: [expect.objectContaining({ field: 'capabilities' })] });
    expect((await s.app.inject({ method: 'GET', url: '/v2/employees', headers: { 'x-api-key': legacy.rawKey! } })).statusCode).toBe(200);

    const refusals: Array<[object, number, string]> = [
      [{ capabilities: ['mcp:orders:read'] }, 422, 'capability_beyond_scopes'],
      [{ capabilities: ['mcp:employees:wrote'] }, 400, 'validation_failed'],
      [{ replace: 'yes' }, 400, 'validation_failed'],
    ];
    for (const [body, status, code] of refusals) {
      const answer = await mint(body);
      expect([answer.status, answer.body.error.code]).toEqual([status, code]);
    }
    // A narrowed admin key cannot hand on what it lacks; a manager's key cannot hold mcp:company:write; another company's admin sees nothing.
    const narrow = client(s.app, (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:teams:read', 'mcp:company:write'], 'narrow')).rawKey);
    expect((await mint({}, narrow)).body.error).toMatchObject({ code: 'capability_not_held', details: { missing: ['mcp:employees:read'] } });
    expect((await mint({}, client(s.app, s.demo.apiKeys.manager))).body.error.code).toBe('missing_capability');
    const initech = await createCompany(s.core.db, `Initech ${backend}`);
    await createUser(s.core.db, { email: `admin-${backend}@initech.example`, displayName: 'Ina', role: 'admin', companyIds: [initech] });
    const foreign = client(s.app, (await mintKeyForUser(s.core.db, `admin-${backend}@initech.example`, 'all')).rawKey);
    expect((await mint({}, foreign)).status).toBe(404);

    // The least set: only the scope called, as `svc migrate audit --key` recommends.
    const first = await mint({});
    expect(first.status).toBe(201);
    expect(first.body.data.successor).toMatchObject({ capabilities: ['mcp:employees:read'], replacedKeyId: null, userEmail: `v4-successor+${legacy.id}@co-acme.invalid` });
    expect(first.body.data.key.cutover.stage).toBe('successor_minted');
    expect((await mint({})).body.error.code).toBe('successor_exists');

    // Replacing keeps the user and the capabilities, revokes the old key and starts "working" over.
    expect((await client(s.app, first.body.data.successor.apiKey).get('/v4/employees')).status).toBe(200);
    expect((await readKey(legacy.id)).cutover.stage).toBe('successor_working');
    const second = await mint({ replace: true });
    expect(second.status).toBe(201);
    expect(second.body.data.successor).toMatchObject({ capabilities: ['mcp:employees:read'], replacedKeyId: first.body.data.successor.keyId, userId: first.body.data.successor.userId });
    expect(second.body.data.key.cutover.stage).toBe('successor_minted');
    expect((await client(s.app, first.body.data.successor.apiKey).get('/v4/me')).status).toBe(401);

    // Revoked elsewhere, the successor no longer carries the integration: back to v2 only, minted again without replace.
    await revokeKey(s.core.db, second.body.data.successor.keyId);
    const { cutover } = await readKey(legacy.id);
    expect(cutover).toMatchObject({ stage: 'v2_only', successor: { active: false } });
    expect(cutover.nextStep).toMatch(/^Mint a new successor v4 key: the previous one \(svc_sk_\w+_…\) no longer works$/);
    const third = await mint({ capabilities: ['mcp:employees:read', 'mcp:teams:read'] });
    expect(third.body.data.successor.capabilities).toEqual(['mcp:employees:read', 'mcp:teams:read']);

    // A key whose scopes all stay on v2 has no successor to mint.
    const catalogs = await register('Catalog export', ['api.catalogs.getAll']);
    expect((await admin.post(`/v4/admin/legacy-keys/${catalogs.id}/successor`, {})).body.error.code).toBe('no_v4_successor');
    expect((await readKey(catalogs.id)).cutover.nextStep).toBe('None of its scopes has a v4 successor: it stays on v2 until the sunset');
  });

  it('serves migration.json to an admin API key, and refuses other credentials', async () => {
    expect((await reportJson()).keys.length).toBeGreaterThan(0);
    const answer = async (key: string) => {
      const response = await fetch(`${s.baseUrl}/app/migration.json`, { headers: { 'x-api-key': key } });
      return [response.status, ((await response.json()) as { error: { code: string } }).error.code];
    };
    expect(await answer(s.demo.apiKeys.manager)).toEqual([403, 'admin_only']);
    expect(await answer('svc_sk_00000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).toEqual([401, 'invalid_api_key']);
    const legacy = await register('Not a v4 key');
    expect(await answer(legacy.rawKey!)).toEqual([401, 'api_key_not_user_bound']);
  });
});

describe.each(backends())('legacy key cutover, automatic policy [%s]', (backend) => {
  const clock = new Clock();
  const logs: Array<{ msg: string; legacyKeyId?: string; reason?: string }> = [];
  let s: ListeningTestApp;
  let logger: Logger;

  beforeAll(async () => {
    logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (logs.push(JSON.parse(chunk.toString())), done()) }));
    // Checked every 50 ms, so the test sees the server run it on its own.
    const mappings = withCutover(loadMappings(defaultMappingsDir()), { autoDisable: true, checkEveryMinutes: 50 / 60_000 });
    s = await startListeningApp(backend, { core: { now: clock.now, mappings, logger } });
  });
  afterAll(async () => s?.close());

  it('disables a key once its successor works and it has been quiet, logs and shows it; leaves the others', async () => {
    const admin = client(s.app, s.demo.apiKeys.admin);
    const register = (name: string) => createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name, scopes: ADDRESS_SCOPES });
    const callV2 = (rawKey: string) => s.app.inject({ method: 'GET', url: `/v2/employees/${s.demo.employees.dana}/deliveryAddress`, headers: { 'x-api-key': rawKey } });
    const [done, unused, busy] = await Promise.all([register('Done'), register('Minted, never used'), register('Still busy')]);
    for (const key of [done, unused, busy]) expect((await callV2(key.rawKey!)).statusCode).toBe(200);
    const successors: Record<string, string> = {};
    for (const key of [done, unused, busy]) successors[key.id] = (await admin.post(`/v4/admin/legacy-keys/${key.id}/successor`, {})).body.data.successor.apiKey;
    for (const key of [done, busy]) expect((await client(s.app, successors[key.id]).get(`/v4/employees/${s.demo.employees.dana}`)).status).toBe(200);

    clock.advance(10);
    expect((await callV2(busy.rawKey!)).statusCode).toBe(200);
    clock.advance(5);
    await expect.poll(async () => (await admin.get(`/v4/admin/legacy-keys/${done.id}`)).body.data.key.cutover.stage, { timeout: 20_000 }).toBe('v2_disabled');

    const { cutover } = (await admin.get(`/v4/admin/legacy-keys/${done.id}`)).body.data.key;
    const reason = `successor key ${cutover.successor.maskedKey} working since ${START.toISOString().slice(0, 10)}; no v2 call since ${START.toISOString().slice(0, 10)} (quiet for 14 days)`;
    expect(cutover.disabled).toEqual({ at: expect.any(String), by: 'policy', reason });
    expect(logs.filter((line) => line.msg === 'legacy key disabled by the cutover policy')).toEqual([expect.objectContaining({ legacyKeyId: done.id, reason })]);
    expect((await callV2(done.rawKey!)).statusCode).toBe(401);
    // Quiet but never observed working, and working but not quiet: both stay.
    expect((await admin.get(`/v4/admin/legacy-keys/${unused.id}`)).body.data.key.cutover.stage).toBe('successor_minted');
    expect((await admin.get(`/v4/admin/legacy-keys/${busy.id}`)).body.data.key.cutover.stage).toBe('successor_working');

    const browser = new FormBrowser();
    await browser.signIn(s.baseUrl, s.demo.emails.admin);
    const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
    expect(page).toContain('On: a key whose successor works and which has been quiet for 14 days is disabled automatically.');
    const auto = /<table id="auto-disabled">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
    expect(auto).toContain('<td>Done</td>');
    expect(auto).toContain(`<td>${reason}</td>`);
    expect(auto).not.toContain('Still busy');
  });

  it('disables a key once when several instances check at the same moment', async () => {
    const key = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Raced', scopes: ADDRESS_SCOPES });
    const admin = client(s.app, s.demo.apiKeys.admin);
    const successor = (await admin.post(`/v4/admin/legacy-keys/${key.id}/successor`, { capabilities: ['mcp:employees:read'] })).body.data.successor.apiKey;
    expect((await client(s.app, successor).get('/v4/me')).status).toBe(200);
    // On PostgreSQL a second instance on the same database and schema; the embedded store has one process, checking from several requests.
    const [{ schema }] = (await s.core.db.query<{ schema: string }>(sql`SELECT current_schema() AS schema`)) as [{ schema: string }];
    const other =
      backend === 'postgres'
        ? await createCore(loadConfig({}, { dataDir: 'memory://', databaseUrl: s.core.config.databaseUrl, secretKey: TEST_SECRET_KEY, logLevel: 'silent' }), { schema, now: clock.now, mappings: s.core.mappings, logger })
        : s.core;
    try {
      clock.advance(15);
      const passes = await Promise.all([s.core, other, s.core, other].map((core) => autoDisableQuietKeys(core)));
      // The server's own timer may get there first: one disable at most among these, and the key is disabled once.
      expect(passes.flat().filter((k) => k.id === key.id).length).toBeLessThanOrEqual(1);
      expect((await admin.get(`/v4/admin/legacy-keys/${key.id}`)).body.data.key.cutover.disabled.by).toBe('policy');
      expect(logs.filter((line) => line.legacyKeyId === key.id && line.msg === 'legacy key disabled by the cutover policy')).toHaveLength(1);
    } finally {
      if (other !== s.core) await other.close();
    }
  });
});

describe('legacy key cutover, the dashboard form for the disable [pglite]', () => {
  it('disables a quiet key with the form (CSRF checked), recorded as the admin’s', async () => {
    const clock = new Clock();
    const s = await startListeningApp('pglite', { core: { now: clock.now } });
    try {
      const legacy = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Form', scopes: ADDRESS_SCOPES });
      const admin = client(s.app, s.demo.apiKeys.admin);
      const successor = (await admin.post(`/v4/admin/legacy-keys/${legacy.id}/successor`, { capabilities: ['mcp:employees:read'] })).body.data.successor.apiKey;
      expect((await client(s.app, successor).get('/v4/me')).status).toBe(200);
      clock.advance(14);
      const browser = new FormBrowser();
      await browser.signIn(s.baseUrl, s.demo.emails.admin);
      const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      expect(cutoverRow(page, legacy.id).stage).toBe('v2_quiet');
      const action = `${s.baseUrl}/app/migration/keys/${legacy.id}/disable`;
      expect((await browser.fetch(action, { form: { _csrf: 'forged' } })).status).toBe(403);
      const posted = await browser.fetch(action, { form: { _csrf: csrfOf(page) } });
      expect([posted.status, posted.headers.get('location')]).toEqual([303, '/app/migration']);
      const after = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      expect(cutoverRow(after, legacy.id)).toEqual({ stage: 'v2_disabled', text: expect.stringContaining(`by an admin: disabled by ${s.demo.emails.admin} on the dashboard`) });

      // A key v2 still calls is offered only the forced disable; the plain one is refused above the dashboard, and a force needs a reason.
      const busy = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Busy', scopes: ADDRESS_SCOPES });
      const v2 = await s.app.inject({ method: 'GET', url: `/v2/employees/${s.demo.employees.dana}/deliveryAddress`, headers: { 'x-api-key': busy.rawKey! } });
      expect(v2.statusCode).toBe(200);
      const busyPage = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      expect(busyPage).toContain('aria-label="Disable Busy before its cutover is done"');
      expect(cutoverRow(busyPage, busy.id).text).toContain(
        'Disable anyway (not yet safe) Not yet safe: it has no successor v4 key; v2 was called with it less than a minute ago, so it is quiet only on 2026-11-30',
      );
      const busyAction = `${s.baseUrl}/app/migration/keys/${busy.id}/disable`;
      const refused = await browser.fetch(busyAction, { form: { _csrf: csrfOf(busyPage) } });
      expect(refused.status).toBe(409);
      const refusedPage = await refused.text();
      expect(textOf(/<p class="error" role="alert">([\s\S]*?)<\/p>/.exec(refusedPage)?.[1] ?? '')).toMatch(new RegExp(`^Legacy key ${busy.id} \\("Busy"\\) is at stage v2_only, not v2_quiet: it has no successor v4 key;`));
      expect(cutoverRow(refusedPage, busy.id).stage).toBe('v2_only');
      const noReason = await browser.fetch(busyAction, { form: { _csrf: csrfOf(refusedPage), force: 'true', reason: ' ' } });
      expect(noReason.status).toBe(400);
      expect(textOf(await noReason.text())).toContain('Invalid disable form: reason: required when force is true');
      const forced = await browser.fetch(busyAction, { form: { _csrf: csrfOf(refusedPage), force: 'true', reason: 'vendor contract ended' } });
      expect([forced.status, forced.headers.get('location')]).toEqual([303, '/app/migration']);
      const afterForce = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      expect(cutoverRow(afterForce, busy.id)).toEqual({ stage: 'v2_disabled', text: expect.stringContaining('by an admin: vendor contract ended') });
      // The manager's session cannot use the forms.
      const manager = new FormBrowser();
      await manager.signIn(s.baseUrl, s.demo.emails.manager);
      const managerPage = await (await manager.fetch(`${s.baseUrl}/app/developers/api-keys`)).text();
      expect((await manager.fetch(`${s.baseUrl}/app/migration/keys/${legacy.id}/successor`, { form: { _csrf: csrfOf(managerPage), capabilities: 'mcp:employees:read' } })).status).toBe(403);
    } finally {
      await s.close();
    }
  });
});

describe.each(backends())('legacy key cutover through svc [%s]', { timeout: 120_000 }, (backend) => {
  const clock = new Clock();
  let s: ListeningTestApp;
  const env = isolatedEnv();
  const { expectStage } = stageProbe(() => s);
  /** svc against the started server, as the demo admin unless another key is given; `stdin` typed on a terminal with `terminal`. */
  const call = (args: string[], { apiKey = s.demo.apiKeys.admin, stdin, terminal = false }: { apiKey?: string; stdin?: string; terminal?: boolean } = {}) =>
    svc([...args, '--format', 'json', '--api-key', apiKey, '--api-url', s.baseUrl, '--allow-localhost'], env, stdin, { terminal });
  const run = async (args: string[], apiKey?: string) => {
    const result = await call(args, { apiKey });
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout).data;
  };
  const planStage = async (id: string) => (await run(['migrate', 'plan', '--key', id])).cutover.stage as string;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: clock.now } });
  });
  afterAll(async () => s?.close());

  it('walks a demo integration from v2 only to disabled with svc migrate plan, mint-successor, whoami and disable', async () => {
    clock.at = START;
    const legacy = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Demo v2 address sync', scopes: ADDRESS_SCOPES });
    const v2 = await s.app.inject({ method: 'GET', url: `/v2/employees/${s.demo.employees.dana}/deliveryAddress`, headers: { 'x-api-key': legacy.rawKey! } });
    expect(v2.statusCode).toBe(200);
    expect(await planStage(legacy.id)).toBe('v2_only');
    await expectStage(legacy.id, 'v2_only');

    clock.advance(1);
    const minted = await run(['legacy-keys', 'mint-successor', legacy.id, '--capabilities', 'mcp:employees:read']);
    expect(minted.successor).toMatchObject({ capabilities: ['mcp:employees:read'], apiKey: expect.stringMatching(/^svc_sk_/) });
    expect(await planStage(legacy.id)).toBe('successor_minted');
    await expectStage(legacy.id, 'successor_minted');

    clock.advance(1);
    expect((await run(['whoami'], minted.successor.apiKey)).user.email).toBe(`v4-successor+${legacy.id}@co-acme.invalid`);
    // whoami needs no capability: it checks the key, and covers none of what the v2 calls need.
    expect(await planStage(legacy.id)).toBe('successor_minted');
    expect((await run(['employees', 'get', s.demo.employees.dana], minted.successor.apiKey)).id).toBe(s.demo.employees.dana);
    expect(await planStage(legacy.id)).toBe('successor_working');
    await expectStage(legacy.id, 'successor_working');
    // Confirmed, yet refused by the API: v2 was called two days ago.
    const tooEarly = await call(['legacy-keys', 'disable', legacy.id, '--yes']);
    expect([tooEarly.code, JSON.parse(tooEarly.stdout).error.code]).toEqual([5, 'legacy_key_in_use']);
    expect(tooEarly.stderr).toContain(`svc: error: Legacy key ${legacy.id} ("Demo v2 address sync") is at stage successor_working, not v2_quiet: v2 was called with it 2 days ago`);

    clock.advance(14);
    expect(await planStage(legacy.id)).toBe('v2_quiet');
    await expectStage(legacy.id, 'v2_quiet');

    clock.advance(1);
    // Not on a terminal and no --yes: refused before any request; on a terminal, it shows the key and asks.
    const unconfirmed = await call(['legacy-keys', 'disable', legacy.id, '--reason', 'moved to v4']);
    expect([unconfirmed.code, unconfirmed.stderr]).toEqual([2, 'svc: error: legacy-keys disable changes or removes data: confirm it with --yes (svc asks only when stdin is a terminal)\n']);
    const question = `Legacy key "Demo v2 address sync" (${legacy.id}) is at stage v2_quiet: Disable the legacy key: its successor works and v2 is quiet\nDisable a legacy v2 key ${legacy.id}? [y/N] `;
    const declined = await call(['legacy-keys', 'disable', legacy.id, '--reason', 'moved to v4'], { stdin: 'n\n', terminal: true });
    expect([declined.code, declined.stderr]).toEqual([1, `${question}svc: error: Not confirmed: legacy-keys disable did nothing (not_confirmed)\n`]);
    expect(await planStage(legacy.id)).toBe('v2_quiet');
    const confirmed = await call(['legacy-keys', 'disable', legacy.id, '--reason', 'moved to v4'], { stdin: 'y\n', terminal: true });
    expect([confirmed.code, confirmed.stderr]).toEqual([0, question]);
    const disabled = JSON.parse(confirmed.stdout).data;
    expect(disabled.key.cutover.disabled).toMatchObject({ by: 'admin', reason: 'moved to v4' });
    expect(await planStage(legacy.id)).toBe('v2_disabled');
    await expectStage(legacy.id, 'v2_disabled');
  });

  it('passes --force --reason through to a forced disable, and refuses --force alone before any request', async () => {
    const gone = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Gone integration', scopes: ADDRESS_SCOPES });
    const noReason = await call(['legacy-keys', 'disable', gone.id, '--yes', '--force']);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason: required when force is true');
    const forced = await run(['legacy-keys', 'disable', gone.id, '--yes', '--force', '--reason', 'integration gone, confirmed by its owner']);
    expect(forced.key.cutover.disabled).toMatchObject({ by: 'admin', reason: 'integration gone, confirmed by its owner' });
  });
});

describe.each(backends())('legacy key cutover, the forced disable and the audit log [%s]', (backend) => {
  const clock = new Clock();
  const logs: Array<{ msg: string; legacyKeyId?: string; admin?: unknown; reason?: string; forcedAtStage?: string }> = [];
  let s: ListeningTestApp;

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (logs.push(JSON.parse(chunk.toString())), done()) }));
    s = await startListeningApp(backend, { core: { now: clock.now, logger } });
  });
  afterAll(async () => s?.close());

  it('forces a disable only with a reason, records it, and logs each mint, replace, disable and undo with the admin and the reason', async () => {
    clock.at = START;
    const admin = client(s.app, s.demo.apiKeys.admin);
    const legacy = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Payroll export', scopes: ADDRESS_SCOPES });
    const callV2 = () => s.app.inject({ method: 'GET', url: `/v2/employees/${s.demo.employees.dana}/deliveryAddress`, headers: { 'x-api-key': legacy.rawKey! } });
    expect((await callV2()).statusCode).toBe(200);
    const path = `/v4/admin/legacy-keys/${legacy.id}`;
    const first = await admin.post(`${path}/successor`, { capabilities: ['mcp:employees:read'] });
    const second = await admin.post(`${path}/successor`, { replace: true });
    expect([first.status, second.status]).toEqual([201, 201]);

    const refused = await admin.post(`${path}/disable`, { reason: 'moving on' });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'legacy_key_in_use']);
    expect(refused.body.error.details.missing).toEqual([
      `its successor key ${second.body.data.key.cutover.successor.maskedKey} has made no successful v4 call needing mcp:employees:read yet`,
      'v2 was called with it less than a minute ago, so it is quiet only on 2026-11-16 (after 14 days without a v2 call)',
    ]);
    expect((await admin.post(`${path}/disable`, { force: true })).body.error.details).toEqual([
      { field: 'reason', rule: 'required_with_force', message: 'required when force is true: say why the key is disabled before its cutover is done' },
    ]);
    expect((await callV2()).statusCode).toBe(200);

    const forced = await admin.post(`${path}/disable`, { force: true, reason: 'payroll vendor switched off, ticket OPS-21' });
    expect(forced.status).toBe(200);
    expect(forced.body.data.key.cutover.disabled).toEqual({ at: START.toISOString(), by: 'admin', reason: 'payroll vendor switched off, ticket OPS-21' });
    expect((await callV2()).statusCode).toBe(401);
    expect((await admin.post(`${path}/enable`, { reason: 'vendor back until December' })).status).toBe(200);

    const me = (await admin.get('/v4/me')).body.data.user;
    const by = { userId: me.id, email: s.demo.emails.admin };
    const audit = logs.filter((line) => line.legacyKeyId === legacy.id).map(({ msg, admin: who, reason, forcedAtStage }) => ({ msg, admin: who, reason, forcedAtStage }));
    expect(audit).toEqual([
      { msg: 'successor key minted', admin: by, reason: undefined, forcedAtStage: undefined },
      { msg: 'successor key replaced', admin: by, reason: undefined, forcedAtStage: undefined },
      { msg: 'legacy key disabled by an admin', admin: by, reason: 'payroll vendor switched off, ticket OPS-21', forcedAtStage: 'successor_minted' },
      { msg: 'legacy key enabled again', admin: by, reason: 'vendor back until December', forcedAtStage: undefined },
    ]);
    // Never a secret: neither the legacy key nor a successor key.
    const logged = JSON.stringify(logs);
    for (const secret of [legacy.rawKey!, first.body.data.successor.apiKey, second.body.data.successor.apiKey]) expect(logged).not.toContain(secret);

    // The same four changes, stored with them (the refused disables stored nothing), newest first, in
    // migration.json and on the dashboard.
    const event = { at: START.toISOString(), legacyKeyId: legacy.id, legacyKeyName: 'Payroll export', companyId: s.demo.companies.acme, by: 'admin', admin: by };
    const [firstKeyId, secondKeyId] = [first.body.data.successor.keyId as string, second.body.data.successor.keyId as string];
    const report = (await (await fetch(`${s.baseUrl}/app/migration.json`, { headers: { 'x-api-key': s.demo.apiKeys.admin } })).json()) as MigrationReport;
    expect(report.cutover.recentEvents).toEqual([
      { ...event, action: 'enabled', reason: 'vendor back until December', forcedAtStage: null, successorKeyId: null },
      { ...event, action: 'disabled', reason: 'payroll vendor switched off, ticket OPS-21', forcedAtStage: 'successor_minted', successorKeyId: secondKeyId },
      { ...event, action: 'successor_replaced', reason: null, forcedAtStage: null, successorKeyId: secondKeyId },
      { ...event, action: 'successor_minted', reason: null, forcedAtStage: null, successorKeyId: firstKeyId },
    ]);
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, s.demo.emails.admin)).status).toBe(303);
    const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
    const table = /<table id="cutover-events">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
    const rows = [...table.matchAll(/<tr data-action="(\w+)">([\s\S]*?)<\/tr>/g)].map((m) => [m[1], textOf(m[2]!)]);
    const when = '2026-11-02 09:00';
    const key = `Payroll export ${legacy.id}`;
    expect(rows).toEqual([
      ['enabled', `${when} ${s.demo.emails.admin} Enabled the legacy key again ${key} vendor back until December`],
      ['disabled', `${when} ${s.demo.emails.admin} Disabled the legacy key (forced, at stage successor minted) ${key} payroll vendor switched off, ticket OPS-21`],
      ['successor_replaced', `${when} ${s.demo.emails.admin} Replaced the successor key: ${secondKeyId} ${key}`],
      ['successor_minted', `${when} ${s.demo.emails.admin} Minted the successor key: ${firstKeyId} ${key}`],
    ]);
  });
});

describe.each(backends())('legacy key cutover, the recent events of the dashboard [%s]', (backend) => {
  let s: ListeningTestApp;

  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(async () => s?.close());

  it('lists only the companies the admin administers, the latest first, and says when there are none', async () => {
    const recentEvents = async () =>
      ((await (await fetch(`${s.baseUrl}/app/migration.json`, { headers: { 'x-api-key': s.demo.apiKeys.admin } })).json()) as MigrationReport).cutover.recentEvents;
    expect(await recentEvents()).toEqual([]);
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, s.demo.emails.admin)).status).toBe(303);
    expect(await (await browser.fetch(`${s.baseUrl}/app/migration`)).text()).toContain('No successor was minted and no key disabled or enabled yet.');

    // The operator's disable, of a key of a company this admin does not administer, and of one they do.
    const elsewhere = await createCompany(s.core.db, 'Initech');
    const [theirs, ours] = await Promise.all([
      createLegacyKey(s.core, s.core.mappings, { companyId: elsewhere, name: 'Initech sync', scopes: ADDRESS_SCOPES }),
      createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Acme sync', scopes: ADDRESS_SCOPES }),
    ]);
    await disableLegacyKey(s.core, theirs.id);
    await disableLegacyKey(s.core, ours.id);
    expect((await recentEvents()).map((e) => [e.legacyKeyId, e.by, e.admin])).toEqual([[ours.id, 'operator', null]]);
    const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
    expect(page).toContain(`<tr data-action="disabled"><td class="nowrap">`);
    expect(page).not.toContain(theirs.id);
  });
});
