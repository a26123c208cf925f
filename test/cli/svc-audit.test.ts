import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readScopeTable } from '../../cli/audit/scope-table.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';
import { createLegacyKey, disableLegacyKey } from '../../src/legacy/legacy-keys.js';
import { defaultMappingsDir, loadMappings } from '../../src/legacy/mappings.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { isolatedEnv, listen, svc, type SvcResult } from './svc-runner.js';

/*
 * `svc migrate audit`: offline over the whole bundled scope table, and with --key against a
 * started server whose gateway recorded the key's usage.
 */

const mappings = loadMappings(defaultMappingsDir());
/** One v2 scope per entry of the table; a wildcard entry is represented by a scope under it. */
const ALL_SCOPES = mappings.scopes.map((entry) => (entry.name.endsWith('.*') ? `${entry.name.slice(0, -2)}.companies` : entry.name));
const ADDRESS_SCOPES = ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update'];
const AS_OF = '2026-11-22';

const env = isolatedEnv();
const audit = (...args: string[]) => svc(['migrate', 'audit', '--as-of', AS_OF, ...args], env);
const report = (result: SvcResult) => {
  expect(result.stderr).toBe('');
  const envelope = JSON.parse(result.stdout);
  expect(envelope.ok).toBe(true);
  return envelope.data;
};

describe('svc migrate audit, offline from the bundled maps', () => {
  it('reads the same scope table as the gateway’s validated loader', () => {
    const table = readScopeTable();
    expect(table.rules).toEqual(
      mappings.scopes.map((e) => ({
        name: e.name,
        status: e.status,
        capability: e.capability,
        endpoints: e.endpoints.map((p) => `${p.method} ${p.path}`),
        note: e.note,
        reason: e.reason,
      })),
    );
    expect(table.schedule).toEqual({ sunset: mappings.sunset.sunset, brownouts: mappings.sunset.brownouts });
    expect(table.quietDays).toBe(mappings.sunset.cutover.quietDays);
  });

  it('reports every scope of the table with its status, capability and endpoints', async () => {
    const result = await audit('--scopes', ALL_SCOPES.join(','), '--format', 'json', '--fail-on', 'none');
    expect(result.code).toBe(0);
    const data = report(result);
    expect(data.scopes.map((f: any) => [f.scope, f.status, f.capability])).toEqual(
      mappings.scopes.map((e, i) => [ALL_SCOPES[i], e.status, e.capability ?? null]),
    );
    const statuses = new Set(data.scopes.map((f: any) => f.status));
    expect([...statuses].sort()).toEqual(['covered-by-order-type', 'mapped', 'mapped-broader', 'no-successor']);
    const byScope = Object.fromEntries(data.scopes.map((f: any) => [f.scope, f]));
    expect(byScope['api.employee.offBoarding']).toMatchObject({ status: 'covered-by-order-type', capability: 'mcp:orders:write', comment: expect.stringContaining('order type') });
    expect(byScope['api.organization.companies']).toMatchObject({ status: 'no-successor', capability: null, comment: 'no organization-level principal in v4' });
    expect(byScope['api.orders.create'].endpoints).toEqual(expect.arrayContaining(['POST /orders/offboarding', 'POST /orders/purchaseOrder']));
    // All ten capabilities: the v2 scopes with a successor cover every v4 group.
    expect(data.summary.capabilities).toHaveLength(10);
    expect(data.summary.stayOnV2).toEqual(['api.catalogs.getAll', 'api.catalogs.items.getAll', 'api.company.get', 'api.company.update', 'api.orders.update', 'api.organization.companies']);
    expect(data.summary).toMatchObject({ sunset: '2027-01-01', daysToSunset: 40 });
    expect(data.windowDays).toBeNull();
  });

  it('names the next brownout, and every window still scheduled, wherever it names the sunset', async () => {
    const notice = 'Next v2 brownout in 9 days: 2026-12-01 14:00 UTC – 17:00 UTC; every v2 call answers 410 Gone during it.';
    const json = report(await audit('--scopes', 'api.employees.getAll', '--format', 'json'));
    expect(json.summary.brownoutNotice).toBe(notice);
    expect(json.summary.brownouts).toEqual({
      active: null,
      next: { start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' },
      scheduled: [
        { start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' },
        { start: '2026-12-15T14:00:00.000Z', end: '2026-12-15T20:00:00.000Z' },
      ],
    });
    expect((await audit('--scopes', 'api.employees.getAll')).stdout).toContain(notice);
    expect((await audit('--scopes', 'api.employees.getAll', '--format', 'markdown')).stdout).toContain(`**${notice}**`);
    // On the day itself, before the window opens.
    const thatDay = report(await svc(['migrate', 'audit', '--as-of', '2026-12-01', '--scopes', 'api.employees.getAll', '--format', 'json'], env));
    expect(thatDay.summary.brownoutNotice).toMatch(/^Next v2 brownout within a day: 2026-12-01 14:00 UTC/);
    const afterAll = report(await svc(['migrate', 'audit', '--as-of', '2026-12-16', '--scopes', 'api.employees.getAll', '--format', 'json'], env));
    expect(afterAll.summary).toMatchObject({ brownoutNotice: null, brownouts: { active: null, next: null, scheduled: [] } });
  });

  it('fails on what --fail-on names, minus --ignore, and says why in the table', async () => {
    const failing = await audit('--scopes', 'api.teams.getAll,api.catalogs.getAll,api.employee.deliveryAddress.get');
    expect(failing.code).toBe(1);
    expect(failing.stdout).toContain('2 finding(s) under --fail-on no-successor, mapped-broader: api.catalogs.getAll, api.employee.deliveryAddress.get');
    expect(failing.stdout).toMatch(/^api\.catalogs\.getAll +no-successor ✗ +— \(stays on v2\) +GET \/catalogs$/m);
    const onlyNoSuccessor = await audit('--scopes', 'api.teams.getAll,api.employee.deliveryAddress.get', '--fail-on', 'no-successor');
    expect(onlyNoSuccessor.code).toBe(0);
    expect(onlyNoSuccessor.stdout).toContain('Clean under --fail-on no-successor');
    const ignored = await audit('--scopes', 'api.teams.getAll,api.catalogs.getAll', '--ignore', 'api.catalogs.getAll');
    expect(ignored.code).toBe(0);
    expect(ignored.stdout).toContain('no-successor (ignored)');
    expect((await audit('--scopes', 'api.employee.offBoarding', '--fail-on', 'covered-by-order-type')).code).toBe(1);
    expect((await audit('--scopes', 'api.teams.getAll', '--fail-on', 'mapped')).code).toBe(1);
  });

  it('exits 2 on bad input: an unknown scope with a did-you-mean, a bad option, no input', async () => {
    const unknown = await audit('--scopes', 'api.employes.getAll,api.team.get,api.nothing.like.this');
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('unknown v2 scope api.employes.getAll (did you mean api.employees.getAll?)');
    expect(unknown.stderr).toContain('unknown v2 scope api.nothing.like.this');
    const json = await audit('--scopes', 'api.employes.getAll', '--format', 'json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'usage_error', message: expect.stringContaining('did you mean') } });
    expect((await audit('--scopes', 'api.team.get', '--fail-on', 'sometimes')).code).toBe(2);
    expect((await audit()).code).toBe(2);
    expect((await audit('--scopes', 'api.team.get', '--scopes-file', 'x')).code).toBe(2);
    expect((await audit('--scopes-file', join(env.XDG_CONFIG_HOME!, 'missing.txt'))).code).toBe(2);
  });

  it('reads --scopes-file as lines, or as the JSON or YAML of an integration config', async () => {
    const dir = env.XDG_CONFIG_HOME!;
    const files = {
      'scopes.txt': '# address sync\napi.employee.deliveryAddress.get\n\napi.employee.deliveryAddress.update\n',
      'integration.json': JSON.stringify({ name: 'sync', auth: { scopes: ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.update'] } }),
      'integration.yaml': 'name: sync\noauth:\n  scope: api.employee.deliveryAddress.get api.employee.deliveryAddress.update\n',
    };
    for (const [file, text] of Object.entries(files)) {
      writeFileSync(join(dir, file), text);
      const data = report(await audit('--scopes-file', join(dir, file), '--format', 'json', '--fail-on', 'none'));
      expect(data.scopes.map((f: any) => f.scope)).toEqual(['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.update']);
    }
    writeFileSync(join(dir, 'empty.json'), '{"name": "no scopes here"}');
    const empty = await audit('--scopes-file', join(dir, 'empty.json'));
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('no scopes found');
  });

  it('accepts a wildcard scope as the maps define them: every entry under its prefix', async () => {
    const data = report(await audit('--scopes', 'api.orders.*,api.orders.getAll,api.organization.*', '--format', 'json', '--fail-on', 'none'));
    expect(data.scopes.map((f: any) => [f.scope, f.grantedAs])).toEqual([
      ['api.orders.getAll', 'api.orders.*'],
      ['api.orders.create', 'api.orders.*'],
      ['api.orders.update', 'api.orders.*'],
      ['api.organization.*', null],
    ]);
    expect(data.summary.capabilities).toEqual(['mcp:orders:read', 'mcp:orders:write']);
    const table = await audit('--scopes', 'api.orders.*', '--ignore', 'api.orders.*');
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('api.orders.* grants: api.orders.getAll, api.orders.create, api.orders.update');
    const unknown = await audit('--scopes', 'api.nothing.*');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown v2 scope api.nothing.*');
  });

  it('prints no minting steps when nothing is to be minted', async () => {
    const result = await audit('--scopes', 'api.catalogs.getAll,api.catalogs.items.getAll', '--format', 'json', '--fail-on', 'none');
    const data = report(result);
    expect(data.summary).toMatchObject({ capabilities: [], mintCommand: null });
    expect(data.summary.checklist).toEqual([
      'Mint no v4 key: no scope of this integration has a v4 successor',
      'Keep the v2 key until the sunset for the scopes without a v4 successor: api.catalogs.getAll, api.catalogs.items.getAll',
    ]);
    const table = await audit('--scopes', 'api.catalogs.getAll', '--fail-on', 'none');
    expect(table.stdout).not.toMatch(/X-API-KEY|mint-successor|\/v4\/me/);
  });

  it('prints --format text as the table report whole and plain, whatever the width; names the formats it takes', async () => {
    const narrow = { ...env, COLUMNS: '40' };
    const scopes = ['migrate', 'audit', '--as-of', AS_OF, '--scopes', ADDRESS_SCOPES.join(',')];
    const text = await svc([...scopes, '--format', 'text'], narrow);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^api\.employee\.deliveryAddress\.create +mapped-broader ✗ +mcp:employees:write +POST \/employees\/:id\/deliveryAddress$/m);
    expect(text.stdout).not.toMatch(/…|hidden to fit/);
    expect((await svc(scopes, narrow)).stdout).toContain('(status, capability, endpoints: hidden to fit 40 columns; --format text, markdown or json shows them)');
    const bad = await svc([...scopes, '--format', 'yaml'], env);
    expect(bad).toMatchObject({ code: 2, stdout: '', stderr: 'svc: error: --format yaml: use one of table, json, text, markdown\n' });
  });

  it('writes the golden markdown report of the address-only integration', async () => {
    const result = await audit('--scopes', ADDRESS_SCOPES.join(','), '--format', 'markdown');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(readFileSync(new URL('./golden/audit-address-only.md', import.meta.url), 'utf8'));
  });
});

describe.each(backends())('svc migrate audit --key against a started server [%s]', { timeout: 120_000 }, (backend) => {
  let t: TestApp;
  let url: string;
  let keyId: string;
  const keyEnv = isolatedEnv();
  const at = () => ['--api-url', url, '--allow-localhost'];

  beforeAll(async () => {
    t = await startTestApp(backend);
    url = await listen(t);
    const legacy = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'Address sync', scopes: ADDRESS_SCOPES });
    keyId = legacy.id;
    // A real v2 call through the gateway today, and an update recorded 45 days ago (outside a 30-day window).
    const response = await fetch(`${url}/v2/employees/${t.demo.employees.dana}/deliveryAddress`, { headers: { 'x-api-key': legacy.rawKey! } });
    expect(response.status).toBe(200);
    t.core.legacyUsage.record(keyId, 'PATCH /employees/:id/deliveryAddress', 'api.employee.deliveryAddress.update', new Date(Date.now() - 45 * 86_400_000));
  });
  afterAll(async () => t?.close());

  it('reports which granted scopes the key called, and mints only what was used', async () => {
    const result = await svc(['migrate', 'audit', '--key', keyId, '--format', 'json', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(result.code, result.stderr).toBe(1);
    const data = report(result);
    expect(data.key).toMatchObject({ id: keyId, companyId: t.demo.companies.acme, name: 'Address sync' });
    expect(data.windowDays).toBe(30);
    const byScope = Object.fromEntries(data.scopes.map((f: any) => [f.scope, f]));
    expect(byScope['api.employee.deliveryAddress.get']).toMatchObject({ calls: 1, lastCalled: new Date().toISOString().slice(0, 10) });
    expect(byScope['api.employee.deliveryAddress.update']).toMatchObject({ calls: 0, lastCalled: expect.any(String) });
    expect(byScope['api.employee.deliveryAddress.create']).toMatchObject({ calls: 0, lastCalled: null });
    expect(data.summary.unusedScopes).toEqual(['api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update']);
    expect(data.summary.capabilities).toEqual(['mcp:employees:read']);
    expect(data.summary.mintCommand).toBe(`svc legacy-keys mint-successor ${keyId} --capabilities mcp:employees:read`);

    const wide = await svc(['migrate', 'audit', '--key', keyId, '--days', '60', '--fail-on', 'unused', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(wide.code).toBe(1);
    expect(wide.stdout).toMatch(/^api\.employee\.deliveryAddress\.update +1 \(last \d{4}-\d{2}-\d{2}\) +mapped-broader +mcp:employees:write/m);
    expect(wide.stdout).toContain('1 finding(s) under --fail-on unused: api.employee.deliveryAddress.create');
    const clean = await svc(['migrate', 'audit', '--key', keyId, '--fail-on', 'no-successor', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(clean.code).toBe(0);
  });

  it('passes scopes to drop under the default --fail-on, and flags quiet and retired keys', async () => {
    const legacy = (scopes: string[], name: string) => createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name, scopes });
    const auditKey = (id: string, ...more: string[]) => svc(['migrate', 'audit', '--key', id, '--api-key', t.demo.apiKeys.admin, ...at(), ...more], keyEnv);

    // Catalogs granted and used, orders (no successor for update, broader for create) granted, never called.
    const dropping = await legacy(['api.catalogs.getAll', 'api.orders.create', 'api.orders.update'], 'Catalog reader');
    t.core.legacyUsage.record(dropping.id, 'GET /catalogs', 'api.catalogs.getAll', new Date());
    const result = await auditKey(dropping.id, '--format', 'json', '--ignore', 'api.catalogs.getAll');
    expect(result.code, result.stdout).toBe(0);
    const data = report(result);
    expect(data.keyState).toBe('active');
    expect(data.findings).toEqual([]);
    expect(data.summary.unusedScopes).toEqual(['api.orders.create', 'api.orders.update']);
    expect(data.summary).toMatchObject({ stayOnV2: ['api.catalogs.getAll'], review: [], mintCommand: null });
    expect(data.summary.checklist[0]).toBe('Mint no v4 key: no scope it called in the last 30 days has a v4 successor');
    expect((await auditKey(dropping.id, '--ignore', 'api.catalogs.getAll', '--fail-on', 'unused')).code).toBe(1);

    const quiet = await legacy(['api.teams.getAll'], 'Forgotten sync');
    const quietTable = await auditKey(quiet.id);
    expect(quietTable.code).toBe(0);
    expect(quietTable.stdout).toContain('Quiet: this v2 key made no call in the last 30 days (never called)');
    expect(quietTable.stdout).toContain(`1. Mint no v4 key: the key made no v2 call in the last 30 days`);
    expect(quietTable.stdout).toContain(
      `2. Disable the v2 key once its owner confirms the integration is gone: \`svc legacy-keys disable ${quiet.id} --force --reason 'integration gone, confirmed by its owner'\``,
    );

    const retired = await legacy(['api.teams.getAll'], 'Retired sync');
    t.core.legacyUsage.record(retired.id, 'GET /teams', 'api.teams.getAll', new Date());
    await disableLegacyKey(t.core, retired.id);
    const retiredData = report(await auditKey(retired.id, '--format', 'json'));
    expect(retiredData.keyState).toBe('retired');
    expect(retiredData.summary.mintCommand).toBeNull();
    const retiredTable = await auditKey(retired.id, '--format', 'markdown');
    expect(retiredTable.stdout).toMatch(/\*\*Retired: this v2 key was disabled on \d{4}-\d{2}-\d{2}\*\*/);
    expect(retiredTable.stdout).toContain('- [ ] Nothing to reissue: the v2 key was disabled on');
  });

  it('keeps the usage column in a 100-column table, hiding the endpoints first', async () => {
    const result = await svc(['migrate', 'audit', '--key', keyId, '--api-key', t.demo.apiKeys.admin, ...at()], { ...keyEnv, COLUMNS: '100' });
    const header = result.stdout.split('\n').find((line) => line.startsWith('SCOPE'))!;
    expect(header.split(/ {2,}/)).toEqual(['SCOPE', 'CALLS IN 30 D', 'STATUS', 'CAPABILITY']);
    expect(result.stdout).toMatch(/^api\.employee\.deliveryAddress\.get +1 \(last \d{4}-\d{2}-\d{2}\) +mapped-broader ✗/m);
    expect(result.stdout).toContain('(endpoints: hidden to fit 100 columns');
  });

  it('reads the key only for an admin of its company, never its secret', async () => {
    const read = await svc(['legacy-keys', 'get', keyId, '--format', 'json', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(read.code).toBe(0);
    expect(read.stdout).not.toMatch(/hash|lk_live_[A-Za-z0-9_-]{20}/);
    const listed = await svc(['legacy-keys', 'list', '--format', 'json', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(JSON.parse(listed.stdout).data.keys.map((k: any) => k.id)).toContain(keyId);

    const manager = await keyWith(t, 'manager', ['mcp:employees:read', 'mcp:company:read']);
    const refused = await svc(['migrate', 'audit', '--key', keyId, '--api-key', manager, ...at()], keyEnv);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('admin_only');
    await createUser(t.core.db, { email: 'globex-admin@globex.example', displayName: 'Globex Admin', role: 'admin', companyIds: [t.demo.companies.globex], nonPersonal: false });
    const globex = (await mintKeyForUser(t.core.db, 'globex-admin@globex.example', ['mcp:company:read'], 'test')).rawKey;
    // Another company's key reads as absent (404, exit 1): a refusal would confirm it exists.
    expect((await svc(['migrate', 'audit', '--key', keyId, '--api-key', globex, ...at()], keyEnv)).code).toBe(1);
    const missing = await svc(['migrate', 'audit', '--key', 'lk_missing', '--api-key', t.demo.apiKeys.admin, ...at()], keyEnv);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Legacy key lk_missing was not found');
    expect((await svc(['migrate', 'audit', '--key', keyId, ...at()], keyEnv)).code).toBe(4);
  });

  it('prints the plan’s reissue steps, whose mint links the successor while the server runs', async () => {
    const admin = ['--api-key', t.demo.apiKeys.admin, ...at()];
    const data = report(await svc(['migrate', 'audit', '--key', keyId, '--format', 'json', ...admin], keyEnv));
    const plan = JSON.parse((await svc(['migrate', 'plan', '--key', keyId, '--format', 'json', ...admin], keyEnv)).stdout).data;
    const planStep = (id: string) => plan.steps.find((step: { id: string }) => step.id === id);
    const line = (id: string) => `${planStep(id).text}: \`${planStep(id).command}\``;
    expect(data.summary.mintCommand).toBe(planStep('mint_successor').command);
    expect(data.summary.checklist).toEqual([
      `Mint the successor v4 key: it creates the key’s own non-personal user and links the key (or use the form on /app/migration, or POST /v4/admin/legacy-keys/${keyId}/successor); the key is shown once: \`${data.summary.mintCommand}\``,
      line('first_v4_call'),
      expect.stringContaining('Move each call to its v4 successor'),
      planStep('v2_quiet').text,
      line('disable_v2_key'),
    ]);

    const minted = await svc([...data.summary.mintCommand.split(' ').slice(1), '--format', 'json', ...admin], keyEnv);
    expect(minted.code, minted.stderr).toBe(0);
    const after = report(await svc(['migrate', 'audit', '--key', keyId, '--format', 'json', ...admin], keyEnv));
    expect(after.key.cutover.stage).toBe('successor_minted');
    expect(after.summary.mintCommand).toBeNull();
    expect(after.summary.checklist[0]).toMatch(/^Successor key \S+ minted on \d{4}-\d{2}-\d{2} for the key’s own non-personal user \(mcp:employees:read\)$/);
  });
});
