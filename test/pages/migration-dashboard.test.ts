import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUserPassword } from '../../src/access/passwords.js';
import { createUser } from '../../src/domain/admin.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import type { MigrationReport } from '../../src/migration/migration-report.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { FormBrowser } from '../oauth/support.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);
/** The 30 days the dashboard shows, 2026-10-24 … 2026-11-22. */
const DAYS = Array.from({ length: 30 }, (_, i) => daysAgo(29 - i).toISOString().slice(0, 10));
const perDay = (calls: Record<string, number>) => DAYS.map((day) => calls[day] ?? 0);

/** The cells of a table's rows as plain text, header row first. */
function tableRows(page: string, id: string): string[][] {
  const table = new RegExp(`<table id="${id}">([\\s\\S]*?)</table>`).exec(page)?.[1];
  if (table === undefined) throw new Error(`no table #${id} in the page`);
  const text = (cell: string) =>
    cell
      .replace(/<[^>]+>/g, ' ')
      .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
      .replace(/\s+/g, ' ')
      .trim();
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) => [...row[1]!.matchAll(/<t[dh][^>]*>([\s\S]*?)<\/t[dh]>/g)].map((cell) => text(cell[1]!)));
}

describe.each(backends())('migration dashboard page [%s]', (backend) => {
  let s: ListeningTestApp;
  let busy: string;
  let silent: string;
  let abroad: string;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => NOW } });
    const { acme, globex } = s.demo.companies;
    const register = async (companyId: string, name: string, scopes: string[]) =>
      (await createLegacyKey(s.core, s.core.mappings, { companyId, name, scopes })).id;
    busy = await register(acme, 'Busy HR sync', ['api.employees.getAll', 'api.catalogs.getAll']);
    silent = await register(acme, 'Old address sync', ['api.employee.deliveryAddress.get']);
    abroad = await register(globex, 'Globex sync', ['api.teams.getAll']);
    const usage = s.core.legacyUsage;
    for (let i = 0; i < 3; i++) usage.record(busy, 'GET /employees', 'api.employees.getAll', daysAgo(0));
    usage.record(busy, 'GET /employees', 'api.employees.getAll', daysAgo(2));
    usage.record(busy, 'GET /catalogs', 'api.catalogs.getAll', daysAgo(1));
    // Before the window, and long enough ago to make the key quiet.
    usage.record(silent, 'GET /employees/:id/deliveryAddress', 'api.employee.deliveryAddress.get', daysAgo(40));
    for (let i = 0; i < 2; i++) usage.record(abroad, 'GET /teams', 'api.teams.getAll', daysAgo(0));
    await usage.flush();
    // An admin of Globex only.
    await createUser(s.core.db, { email: 'ops@globex.example', displayName: 'Olga Ops', role: 'admin', companyIds: [globex] });
    await setUserPassword(s.core.db, 'ops@globex.example', 'globex-ops-password');
  });
  afterAll(async () => s.close());

  const signedIn = async (email: string, password?: string) => {
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, email, password)).status).toBe(303);
    return browser;
  };

  it('shows an admin the traffic, endpoints, scopes without successor, quiet keys and days to sunset of their companies', async () => {
    const browser = await signedIn('admin@demo.example');
    const response = await browser.fetch(`${s.baseUrl}/app/migration`);
    expect(response.status).toBe(200);
    const page = await response.text();

    expect(page).toMatch(/data-testid="days-to-sunset">40</);
    expect(page).toContain('v2 stops answering on 2027-01-01 (UTC).');
    expect(page).toContain('<a href="/app/migration">v2 migration</a>');
    expect(page).toContain('<a href="/docs/migration">the migration guide</a>');
    expect(page).not.toContain('<script');
    // The chart: one line per company, its title and description, a legend.
    const chart = /<svg class="chart" id="company-traffic"[\s\S]*?<\/svg>/.exec(page)?.[0] ?? '';
    expect(chart).toContain('<title id="company-traffic-title">v2 calls per day, by company</title>');
    expect(chart).toContain('from 2026-10-24 to 2026-11-22, one line per company: Acme Corp 5 calls, Globex GmbH 2 calls.</desc>');
    expect(chart.match(/<polyline /g)).toHaveLength(2);
    expect(page).toMatch(/<ul class="legend" aria-label="Legend">.*Acme Corp<\/li>.*Globex GmbH<\/li><\/ul>/s);

    expect(tableRows(page, 'keys')).toEqual([
      ['Key', 'Company', 'Last 30 days', 'Calls', 'Last call (UTC)', 'Status'],
      [`Busy HR sync ${busy}`, 'Acme Corp', '', '5', '2026-11-22 12:00', 'active'],
      [`Globex sync ${abroad}`, 'Globex GmbH', '', '2', '2026-11-22 12:00', 'active'],
      [`Old address sync ${silent}`, 'Acme Corp', '', '0', '2026-10-13 12:00', 'quiet'],
    ]);
    expect(page).toContain('aria-label="Busy HR sync: calls per day, 5 in 30 days"');
    const traffic = tableRows(page, 'traffic-table');
    expect(traffic[0]).toEqual(['Day (UTC)', 'Acme Corp', 'Globex GmbH', 'Busy HR sync', 'Globex sync', 'Old address sync']);
    expect(traffic.slice(-3)).toEqual([
      ['2026-11-20', '1', '0', '1', '0', '0'],
      ['2026-11-21', '1', '0', '1', '0', '0'],
      ['2026-11-22', '3', '2', '3', '2', '0'],
    ]);
    expect(traffic).toHaveLength(31);

    expect(tableRows(page, 'endpoints')).toEqual([
      ['Endpoint', 'Scope', 'Calls', 'Last day'],
      ['GET /employees', 'api.employees.getAll', '4', '2026-11-22'],
      ['GET /teams', 'api.teams.getAll', '2', '2026-11-22'],
      ['GET /catalogs', 'api.catalogs.getAll', '1', '2026-11-21'],
    ]);
    expect(tableRows(page, 'no-successor')).toEqual([
      ['Scope', 'Why', 'Calls', 'Keys'],
      ['api.catalogs.getAll', 'catalogs and collections are outside the migrated groups', '1', busy],
    ]);
    expect(tableRows(page, 'quiet-keys')).toEqual([
      ['Key', 'Company', 'Last call (UTC)', 'Disable with'],
      ['Old address sync', 'Acme Corp', '2026-10-13', `svc legacy-keys disable ${silent} --force --reason 'quiet, and its integration is gone'`],
    ]);
  });

  it('serves the same report as JSON', async () => {
    const browser = await signedIn('admin@demo.example');
    const response = await browser.fetch(`${s.baseUrl}/app/migration.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const { acme, globex } = s.demo.companies;
    const v2Only = expect.objectContaining({ stage: 'v2_only', successor: null, disabled: null });
    expect(await response.json()).toEqual({
      generatedAt: '2026-11-22T12:00:00.000Z',
      sunset: { at: '2027-01-01T00:00:00.000Z', daysLeft: 40, brownouts: { active: null, next: { start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' }, scheduled: [{ start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' }, { start: '2026-12-15T14:00:00.000Z', end: '2026-12-15T20:00:00.000Z' }] } },
      days: DAYS,
      companies: [
        { id: acme, name: 'Acme Corp', callsPerDay: perDay({ '2026-11-20': 1, '2026-11-21': 1, '2026-11-22': 3 }), total: 5 },
        { id: globex, name: 'Globex GmbH', callsPerDay: perDay({ '2026-11-22': 2 }), total: 2 },
      ],
      keys: [
        {
          id: busy,
          name: 'Busy HR sync',
          companyId: acme,
          callsPerDay: perDay({ '2026-11-20': 1, '2026-11-21': 1, '2026-11-22': 3 }),
          total: 5,
          lastUsedAt: '2026-11-22T12:00:00.000Z',
          disabled: false,
          quiet: false,
          // The cutover is walked in test/gateway/cutover.test.ts; the successor gets what the key called (the teams lookup at most).
          cutover: v2Only,
          successorCapabilities: { suggested: ['mcp:employees:read'], allowed: ['mcp:employees:read', 'mcp:teams:read'] },
        },
        {
          id: abroad, name: 'Globex sync', companyId: globex, callsPerDay: perDay({ '2026-11-22': 2 }), total: 2, lastUsedAt: '2026-11-22T12:00:00.000Z', disabled: false, quiet: false,
          cutover: v2Only, successorCapabilities: { suggested: ['mcp:teams:read'], allowed: ['mcp:teams:read'] },
        },
        {
          id: silent, name: 'Old address sync', companyId: acme, callsPerDay: perDay({}), total: 0, lastUsedAt: '2026-10-13T12:00:00.000Z', disabled: false, quiet: true,
          // Its last call lies before the 30-day window: nothing to suggest.
          cutover: v2Only, successorCapabilities: { suggested: [], allowed: ['mcp:employees:read'] },
        },
      ],
      endpoints: [
        { endpoint: 'GET /employees', scope: 'api.employees.getAll', calls: 4, lastDay: '2026-11-22' },
        { endpoint: 'GET /teams', scope: 'api.teams.getAll', calls: 2, lastDay: '2026-11-22' },
        { endpoint: 'GET /catalogs', scope: 'api.catalogs.getAll', calls: 1, lastDay: '2026-11-21' },
      ],
      noSuccessorInUse: [{ scope: 'api.catalogs.getAll', reason: 'catalogs and collections are outside the migrated groups', calls: 1, keyIds: [busy] }],
      cutover: { quietDays: 14, autoDisable: false, keysByStage: { v2_only: 3, successor_minted: 0, successor_working: 0, v2_unmovable_only: 0, v2_quiet: 0, v2_disabled: 0 }, recentEvents: [] },
      // Off by default (test/gateway/shadow-check.test.ts covers it on).
      shadow: expect.objectContaining({ enabled: false, routes: [], examples: [] }),
    });
  });

  it('shows an admin of one company only that company', async () => {
    const browser = await signedIn('ops@globex.example', 'globex-ops-password');
    const report = (await (await browser.fetch(`${s.baseUrl}/app/migration.json`)).json()) as MigrationReport;
    expect(report.companies.map((c) => c.id)).toEqual([s.demo.companies.globex]);
    expect(report.keys.map((k) => k.id)).toEqual([abroad]);
    const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
    expect(tableRows(page, 'endpoints').slice(1)).toEqual([['GET /teams', 'api.teams.getAll', '2', '2026-11-22']]);
    expect(page).not.toContain('Busy HR sync');
    expect(page).not.toContain('Acme Corp');
  });

  it('refuses a non-admin with 403, page and JSON, and hides the link', async () => {
    const browser = await signedIn('manager@acme.example');
    const response = await browser.fetch(`${s.baseUrl}/app/migration`);
    expect(response.status).toBe(403);
    const page = await response.text();
    expect(page).toContain('The migration dashboard is for admins; ask an admin of your company');
    expect(page).not.toContain('href="/app/migration"');
    const json = await browser.fetch(`${s.baseUrl}/app/migration.json`);
    expect(json.status).toBe(403);
    expect(await json.json()).toEqual({
      ok: false,
      error: { code: 'admin_only', message: 'The migration dashboard is for admins; ask an admin of your company' },
      meta: { requestId: expect.any(String) },
    });
  });

  it('sends a signed-out visitor to sign in, and answers the JSON form with 401', async () => {
    const browser = new FormBrowser();
    const response = await browser.fetch(`${s.baseUrl}/app/migration`);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/app/sign-in?return=%2Fapp%2Fmigration');
    const json = await browser.fetch(`${s.baseUrl}/app/migration.json`);
    expect(json.status).toBe(401);
    expect(((await json.json()) as { error: { code: string } }).error.code).toBe('not_signed_in');
  });
});
