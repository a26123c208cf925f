import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET_KEY } from '../helpers/harness.js';
import { freePort } from '../helpers/ports.js';
import { ServerProcess } from '../helpers/server-process.js';
import { auditStore, danaOf, driveWrites, stockDevices, unreadableWrites, type WriteLog } from './support.js';

/*
 * PostgreSQL itself killed mid-write: a private cluster (Debian's binaries, fsync on) is stopped
 * with `pg_ctl -m immediate` (every server process gets SIGQUIT: no checkpoint, crash recovery at
 * the next start) while the service writes. After the restart, every write the service
 * acknowledged is there and nothing is half-written; the service reconnects by itself.
 */

const LOAD_MS = 1500;

function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root) ? readdirSync(root).sort().at(-1) : undefined;
  const bin = version && join(root, version, 'bin');
  if (!bin || !existsSync(join(bin, 'initdb'))) throw new Error(`PostgreSQL server binaries not found under ${root} (apt-get install postgresql)`);
  return bin;
}

/** initdb refuses root: as root, the cluster runs as the postgres user. */
function asClusterOwner(command: string, args: string[]): void {
  const asRoot = userInfo().uid === 0;
  execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { stdio: 'pipe' });
}

describe('PostgreSQL killed mid-write (a private cluster)', () => {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pgcrash-'));
  const data = join(dir, 'data');
  let port: number;
  const pgCtl = (...args: string[]) => asClusterOwner(join(bin, 'pg_ctl'), ['-D', data, '-w', ...args]);
  const start = () => pgCtl('-l', join(dir, 'server.log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start');

  beforeAll(async () => {
    port = await freePort();
    chmodSync(dir, 0o777);
    if (userInfo().uid === 0) {
      const owner = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
      chownSync(dir, Number(owner), Number(owner));
    }
    asClusterOwner(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    start();
  }, 60_000);
  afterAll(() => {
    try {
      pgCtl('-m', 'immediate', 'stop');
    } catch {
      // Already stopped by a failed test.
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged write, and nothing half-written, across a crash of the database', async () => {
    const databaseUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const env = { SVC_SECRET_KEY: TEST_SECRET_KEY, DATABASE_URL: databaseUrl };
    const server = await ServerProcess.start(['--demo'], env);
    let log: WriteLog;
    try {
      const demo = server.summary.demo!;
      const apiKey = demo.apiKeys.admin!;
      const devices = await stockDevices(server.summary.url, apiKey, demo.companies.acme!, 1500);

      const crashed = new Promise((resolve) => setTimeout(resolve, LOAD_MS)).then(() => pgCtl('-m', 'immediate', 'stop'));
      log = await driveWrites(server.summary.url, {
        apiKey,
        companyId: demo.companies.acme!,
        employeeId: await danaOf(server.summary.url, apiKey),
        devices,
        concurrency: 6,
        until: crashed.then(() => new Promise((resolve) => setTimeout(resolve, 500))),
      });
      expect(log.acknowledged.length).toBeGreaterThan(10);
      // While the database is down, writes are refused as unavailable, never as a fault of ours.
      expect(log.refused.length).toBeGreaterThan(0);
      expect(log.refused.filter((r) => r.status !== 503)).toEqual([]);

      start();
      // The same server process, never restarted, serves again once its pool reconnects.
      let ready = 0;
      for (let i = 0; i < 60 && ready !== 200; i++) {
        ready = (await fetch(`${server.summary.url}/readyz`)).status;
        if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(ready).toBe(200);
      expect(await unreadableWrites(server.summary.url, apiKey, log)).toEqual([]);
    } finally {
      await server.stop();
    }

    expect(await auditStore({ databaseUrl, secretKey: TEST_SECRET_KEY }, log)).toEqual({ missing: [], halfWritten: [] });
  }, 180_000);
});
