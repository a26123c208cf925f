import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { auditWrites, driveWrites, stockDevices, type WriteLog } from './support.js';

/*
 * PostgreSQL connections lost mid-write: under concurrent writes through the HTTP API, every backend
 * of this app's pool is terminated, three times. The machine's server keeps running (other tests use
 * it); the app's connections carry their own application_name, so only they are cut.
 */

const APPLICATION_NAME = `svc_fault_${process.pid}`;
const ROUNDS = 3;

describe.skipIf(!inject('postgresUrl'))('PostgreSQL connections killed mid-write [postgres]', () => {
  let t: ListeningTestApp;
  let admin: pg.Client;

  beforeAll(async () => {
    const url = new URL(inject('postgresUrl'));
    url.searchParams.set('application_name', APPLICATION_NAME);
    t = await startListeningApp('postgres', { config: { databaseUrl: url.toString() } });
    admin = new pg.Client({ connectionString: inject('postgresUrl') });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await t?.close();
  });

  const terminateAppConnections = async () =>
    (await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [APPLICATION_NAME])).rowCount ?? 0;

  it('loses no acknowledged write, half-writes nothing, and answers 503 database_unavailable while cut off', async () => {
    const devices = await stockDevices(t.baseUrl, t.demo.apiKeys.admin!, t.demo.companies.acme, 2000);
    let terminated = 0;
    const log: WriteLog = { acknowledged: [], refused: [] };
    // Cuts go on until enough writes were acknowledged between them, however slow the machine.
    const faults = (async () => {
      for (let round = 0; round < ROUNDS || log.acknowledged.length <= 30; round++) {
        await new Promise((resolve) => setTimeout(resolve, 400));
        terminated += await terminateAppConnections();
      }
      // Writes go on after the last cut: the pool must have recovered by itself.
      await new Promise((resolve) => setTimeout(resolve, 600));
    })();
    await driveWrites(t.baseUrl, {
      apiKey: t.demo.apiKeys.admin!,
      companyId: t.demo.companies.acme,
      employeeId: t.demo.employees.dana,
      devices,
      concurrency: 8,
      until: faults,
      log,
    });

    expect(terminated).toBeGreaterThan(0);
    expect(log.refused.length).toBeGreaterThan(0);
    expect(log.acknowledged.length).toBeGreaterThan(30);
    // Every refusal is the clean one: 503, its code, and when to retry. No 500, no dropped connection.
    const unclean = log.refused.filter((r) => r.status !== 503 || r.code !== 'database_unavailable' || r.retryAfter === null);
    expect(unclean).toEqual([]);

    const { missing, halfWritten } = await auditWrites(t.core, log);
    expect(missing).toEqual([]);
    expect(halfWritten).toEqual([]);

    // And the app serves again.
    const after = await fetch(`${t.baseUrl}/v4/teams`, { headers: { 'x-api-key': t.demo.apiKeys.admin! } });
    expect(after.status).toBe(200);
  }, 60_000);
});
