import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createCore } from '../../src/core.js';
import { backends, TEST_SECRET_KEY } from '../helpers/harness.js';
import { startServeProcess } from './server-process.js';
import { auditWrites, danaOf, driveWrites, stockDevices, type WriteLog } from './support.js';

/*
 * `kill -9` of the server under write load, on an embedded data directory and on PostgreSQL: the
 * restarted server (taking over the dead one's lock) has every acknowledged write, and the store
 * holds nothing half-written.
 */

const LOAD_MS = 1500;

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('postgresUrl') });
  await admin.connect();
  await admin.query(text);
  await admin.end();
}

describe.each(backends())('kill -9 under write load [%s]', (backend) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-kill9-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const databaseUrl = (() => {
    if (backend !== 'postgres') return undefined;
    const url = new URL(inject('postgresUrl'));
    url.searchParams.set('options', `-c search_path=${schema}`);
    return url.toString();
  })();
  const env = { SVC_SECRET_KEY: TEST_SECRET_KEY, DATABASE_URL: databaseUrl ?? '' };
  const args = backend === 'pglite' ? ['--data-dir', dataDir] : [];

  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (databaseUrl) await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  it('restarts on the same store with every acknowledged write and nothing half-written', async () => {
    if (databaseUrl) await adminQuery(`CREATE SCHEMA ${schema}`);
    const first = await startServeProcess([...args, '--demo'], env);
    const demo = first.summary.demo!;
    const devices = await stockDevices(first.summary.url, demo.apiKeys.admin!, demo.companies.acme!, 1500);

    const killed = new Promise((resolve) => setTimeout(resolve, LOAD_MS)).then(() => first.kill9());
    const log: WriteLog = await driveWrites(first.summary.url, {
      apiKey: demo.apiKeys.admin!,
      companyId: demo.companies.acme!,
      employeeId: await danaOf(first.summary.url, demo.apiKeys.admin!),
      devices,
      concurrency: 6,
      until: killed,
    });
    await killed;
    expect(log.acknowledged.length).toBeGreaterThan(10);
    if (backend === 'pglite') expect(Number(readFileSync(join(dataDir, 'svc.lock'), 'utf8'))).toBe(first.child.pid);

    // The restart takes the dead process's lock over and serves every acknowledged write.
    const second = await startServeProcess(args, env);
    for (const { kind, id } of log.acknowledged) {
      const path = { team: 'teams', employee: 'employees', order: 'orders' }[kind];
      const response = await fetch(`${second.summary.url}/v4/${path}/${id}`, { headers: { 'x-api-key': demo.apiKeys.admin! } });
      expect(response.status, `${kind} ${id}: ${second.stderr()}`).toBe(200);
    }
    expect(await second.stop()).toBe(0);

    // And the store itself holds nothing half-written.
    const core = await createCore(loadConfig({}, { dataDir, databaseUrl, secretKey: TEST_SECRET_KEY, logLevel: 'silent' }), {
      logger: pino({ level: 'silent' }),
    });
    try {
      const { missing, halfWritten } = await auditWrites(core, log);
      expect(missing).toEqual([]);
      expect(halfWritten).toEqual([]);
    } finally {
      await core.close();
    }
  }, 120_000);
});
