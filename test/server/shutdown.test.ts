import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createCore } from '../../src/core.js';
import { sql, type Sql } from '../../src/store/sql.js';
import { freshDataDir, runCommand, ServerProcess } from '../helpers/server-process.js';

/*
 * SIGTERM while a request is in flight: the request still completes (and its write is committed),
 * new work is refused, pending usage counts are flushed, and the process exits 0. The request is held
 * in flight deterministically: its body is sent in two halves, the second only after the server has
 * logged that it is shutting down.
 */

interface SeedSummary {
  apiKeys: { admin: string };
  legacyKeys: { full: string };
}

function send(url: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Reads the embedded store while no server holds it. */
async function queryStore<R>(dataDir: string, statement: Sql): Promise<R[]> {
  const core = await createCore(loadConfig({}, { dataDir, logLevel: 'silent' }));
  try {
    return await core.db.query<R>(statement);
  } finally {
    await core.close();
  }
}

/** v2 calls counted in the store (the demo seeds some history). */
async function v2CallsRecorded(dataDir: string): Promise<number> {
  const [usage] = await queryStore<{ calls: number | null }>(dataDir, sql`SELECT sum(calls)::int AS calls FROM legacy_key_usage`);
  return usage?.calls ?? 0;
}

describe('svc-server serve: graceful shutdown on SIGTERM', () => {
  const dataDir = freshDataDir();
  let server: ServerProcess | undefined;
  afterAll(() => server?.kill9());

  it('finishes the in-flight request, flushes usage and exits 0', async () => {
    const seeded = JSON.parse(await runCommand(['seed', '--demo', '--json', '--data-dir', dataDir])) as SeedSummary;
    const usageBefore = await v2CallsRecorded(dataDir);
    // Usage is written only at shutdown: a flush interval far beyond the test.
    // Debug, so that a request's arrival is logged (at info only its end is).
    server = await ServerProcess.start(['--data-dir', dataDir, '--log-level', 'debug'], { LEGACY_USAGE_FLUSH_MS: '60000' });
    const { url } = server.summary;
    const admin = { 'x-api-key': seeded.apiKeys.admin };

    const list = await send(`${url}/v4/employees?limit=1`, 'GET', admin);
    const employeeId = (JSON.parse(list.body) as { data: { employees: Array<{ id: string }> } }).data.employees[0]!.id;
    const v2 = await send(`${url}/v2/employees`, 'GET', { 'x-api-key': seeded.legacyKeys.full });
    expect(v2.status).toBe(200);

    const body = JSON.stringify({ displayName: 'Renamed During Shutdown' });
    const path = `/v4/employees/${employeeId}`;
    let answer: { status: number; body: string } | undefined;
    const inFlight = new Promise<void>((resolve, reject) => {
      const req = request(
        `${url}${path}`,
        { method: 'PATCH', headers: { ...admin, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => {
            answer = { status: res.statusCode ?? 0, body: text };
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      void server!
        .until(() => server!.logs.some((line) => line.msg === 'incoming request' && (line.req as { url?: string })?.url === path), 'the PATCH arrived')
        .then(async () => {
          void server!.stop();
          await server!.until(() => server!.logs.some((line) => line.msg?.startsWith('shutting down') === true), 'it logged the shutdown');
          req.end(body.slice(10));
        }, reject);
    });
    await inFlight;

    expect(answer!.status).toBe(200);
    expect(JSON.parse(answer!.body)).toMatchObject({ ok: true, data: { id: employeeId, displayName: 'Renamed During Shutdown' } });
    expect(await server.exited).toBe(0);
    expect(server.logs.some((line) => line.msg === 'stopped')).toBe(true);
    // Drained, not cut: no connection was still open when the grace period ended.
    expect(server.logs.filter((line) => line.msg?.startsWith('in-flight requests outlasted'))).toEqual([]);

    // What the process acknowledged is on disk: the update, and the v2 call counted at shutdown.
    const [employee] = await queryStore<{ display_name: string }>(dataDir, sql`SELECT display_name FROM employees WHERE id = ${employeeId}`);
    expect(employee?.display_name).toBe('Renamed During Shutdown');
    expect(await v2CallsRecorded(dataDir)).toBe(usageBefore + 1);
    // Four processes start one after the other (seed, count, serve, check), each migrating the store.
  }, 120_000);
});
