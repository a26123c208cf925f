import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { adminQuery, backends, TEST_SECRET_KEY } from '../helpers/harness.js';
import { ServerProcess } from '../helpers/server-process.js';
import { auditStore, danaOf, driveWrites, sendWrite, stockDevices, unreadableWrites, type WriteLog } from './support.js';

/*
 * `kill -9` of the server under write load, on an embedded data directory and on PostgreSQL: the
 * restarted server (taking over the dead one's lock) has every acknowledged write, each write the kill
 * cut off is applied exactly once when retried with its Idempotency-Key, and the store holds nothing
 * half-written.
 */

const LOAD_MS = 1500;

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
    const first = await ServerProcess.start([...args, '--demo'], env);
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
    const second = await ServerProcess.start(args, env);
    expect(await unreadableWrites(second.summary.url, demo.apiKeys.admin!, log), second.stderr()).toEqual([]);
    // Each write the kill cut off, retried with its key, ends applied exactly once: one applied before the
    // kill is replayed (without the key its unique name, email or held device would answer 409).
    const lost = log.refused.filter((r) => r.status === 0);
    expect(lost.length).toBeGreaterThan(0);
    for (const { kind, write } of lost) {
      const retry = await sendWrite(second.summary.url, demo.apiKeys.admin!, write);
      const body = (await retry.json()) as { data?: { id?: string } };
      expect(retry.status, `${kind} ${write.key}: ${JSON.stringify(body)}`).toBe(201);
      log.acknowledged.push({ kind, id: body.data!.id! });
    }
    expect(await unreadableWrites(second.summary.url, demo.apiKeys.admin!, log)).toEqual([]);
    expect(await second.stop()).toBe(0);
    // And the store itself holds nothing half-written.
    expect(await auditStore({ dataDir, databaseUrl, secretKey: TEST_SECRET_KEY }, log)).toEqual({ missing: [], halfWritten: [] });
  }, 120_000);
});
