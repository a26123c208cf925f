import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { buildMigrationReport } from '../../src/migration/migration-report.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);

describe.each(backends())('migration report [%s]', (backend) => {
  let t: TestApp;
  let busy: string;
  let silent: string;
  let abroad: string;
  beforeAll(async () => {
    t = await startTestApp(backend, { core: { now: () => NOW } });
    const { acme, globex } = t.demo.companies;
    const register = async (companyId: string, name: string, scopes: string[]) =>
      (await createLegacyKey(t.core, t.core.mappings, { companyId, name, scopes })).id;
    busy = await register(acme, 'Busy HR sync', ['api.employees.getAll', 'api.catalogs.getAll']);
    silent = await register(acme, 'Old address sync', ['api.employee.deliveryAddress.get']);
    abroad = await register(globex, 'Globex sync', ['api.teams.getAll']);
    const usage = t.core.legacyUsage;
    for (let i = 0; i < 3; i++) usage.record(busy, 'GET /employees', 'api.employees.getAll', daysAgo(0));
    usage.record(busy, 'GET /employees', 'api.employees.getAll', daysAgo(2));
    usage.record(busy, 'GET /catalogs', 'api.catalogs.getAll', daysAgo(1));
    // Outside the 30 days shown, and long enough ago to make the key quiet.
    usage.record(silent, 'GET /employees/:id/deliveryAddress', 'api.employee.deliveryAddress.get', daysAgo(40));
    usage.record(abroad, 'GET /teams', 'api.teams.getAll', daysAgo(0));
  });
  afterAll(async () => {
    await t.close();
  });

  it('shows traffic per company and per key by day, only in the companies asked for', async () => {
    const report = await buildMigrationReport(t.core, { companyIds: [t.demo.companies.acme], days: 7 });
    expect(report.days).toEqual(['2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22']);
    expect(report.companies).toEqual([{ id: t.demo.companies.acme, name: expect.any(String), callsPerDay: [0, 0, 0, 0, 1, 1, 3], total: 5 }]);
    const byId = new Map(report.keys.map((key) => [key.id, key]));
    expect(byId.has(abroad)).toBe(false);
    expect(byId.get(busy)).toMatchObject({ callsPerDay: [0, 0, 0, 0, 1, 1, 3], total: 5, quiet: false, disabled: false });
    expect(byId.get(silent)).toMatchObject({ total: 0, quiet: true, lastUsedAt: daysAgo(40).toISOString() });
    expect(report.keys[0]!.id).toBe(busy);
  });

  it('lists the endpoints still called, the scopes without a successor in use, and the days left', async () => {
    const report = await buildMigrationReport(t.core, { companyIds: [t.demo.companies.acme] });
    expect(report.endpoints).toEqual([
      { endpoint: 'GET /employees', scope: 'api.employees.getAll', calls: 4, lastDay: '2026-11-22' },
      { endpoint: 'GET /catalogs', scope: 'api.catalogs.getAll', calls: 1, lastDay: '2026-11-21' },
    ]);
    expect(report.noSuccessorInUse).toEqual([{ scope: 'api.catalogs.getAll', reason: expect.any(String), calls: 1, keyIds: [busy] }]);
    expect(report.sunset).toEqual({ at: '2027-01-01T00:00:00.000Z', daysLeft: 40, brownouts: { active: null, next: { start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' }, scheduled: [{ start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' }, { start: '2026-12-15T14:00:00.000Z', end: '2026-12-15T20:00:00.000Z' }] } });
  });
});
