import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
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

/** One HTTP/1.1 connection driven by hand, so that the test sees what the server does with it between requests. */
class RawConnection {
  private buffered = '';
  private readonly waiters: Array<() => void> = [];
  readonly closed: Promise<void>;
  private readonly socket: Socket;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
  }

  /** Sends GET `path` on this connection; resolves with the answer's status and headers (lower-cased names). */
  async get(path: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);
    for (;;) {
      const end = this.buffered.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buffered.slice(0, end).split('\r\n');
        const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffered.length >= end + 4 + length) {
          const body = this.buffered.slice(end + 4, end + 4 + length);
          this.buffered = this.buffered.slice(end + 4 + length);
          return { status: Number(statusLine!.split(' ')[1]), headers, body };
        }
      }
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), this.closed.then(() => Promise.reject(new Error('connection closed')))]);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

describe('svc-server serve: the drain before a stop', () => {
  let server: ServerProcess | undefined;
  afterEach(() => server?.kill9());

  it('on SIGTERM keeps serving while /readyz answers 503, each answer closing its connection', async () => {
    // A drain far longer than the test: everything below happens inside it.
    server = await ServerProcess.start(['--data-dir', 'memory://', '--log-level', 'info'], { SHUTDOWN_DRAIN_MS: '300000' });
    const { url } = server.summary;
    const before = new RawConnection(url);
    expect((await before.get('/readyz')).status).toBe(200);
    expect((await before.get('/healthz')).headers.connection).toBe('keep-alive');

    server.child.kill('SIGTERM');
    await server.until(() => server!.logs.some((line) => line.msg?.startsWith('draining') === true), 'it logged the drain');
    const ready = await before.get('/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toMatchObject({ ok: false, status: 'draining', error: { code: 'draining' } });
    expect(ready.headers.connection).toBe('close');
    await before.closed;
    // Still listening and serving: a new connection is answered, and closed after its answer.
    const during = new RawConnection(url);
    const served = await during.get('/healthz');
    expect(served.status).toBe(200);
    expect(served.headers.connection).toBe('close');
    await during.closed;
  }, 120_000);

  it('then closes idle kept-alive connections and, idle, exits 0 without cutting a request', async () => {
    // A grace far longer than the test: a stop that waited on the idle connection would be cut, and say so.
    server = await ServerProcess.start(['--data-dir', 'memory://', '--log-level', 'info'], { SHUTDOWN_DRAIN_MS: '200', SHUTDOWN_GRACE_MS: '300000' });
    const idle = new RawConnection(server.summary.url);
    expect((await idle.get('/healthz')).headers.connection).toBe('keep-alive');
    expect(await server.stop()).toBe(0);
    await idle.closed;
    expect(server.logs.some((line) => line.msg === 'stopped')).toBe(true);
    expect(server.logs.filter((line) => line.msg?.startsWith('in-flight requests outlasted'))).toEqual([]);
  }, 120_000);

  it('skips the drain on SIGINT, a person at a terminal', async () => {
    server = await ServerProcess.start(['--data-dir', 'memory://', '--log-level', 'info'], { SHUTDOWN_DRAIN_MS: '300000' });
    server.child.kill('SIGINT');
    expect(await server.exited).toBe(0);
    expect(server.logs.some((line) => line.msg?.startsWith('draining') === true)).toBe(false);
  }, 120_000);
});
