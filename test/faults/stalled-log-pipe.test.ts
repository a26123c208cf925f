import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { seriesValue } from '../helpers/prometheus.js';
import { ServerProcess } from '../helpers/server-process.js';

/*
 * The reader of the server's log pipe (stdout) stops reading, as a stalled log collector does, or goes
 * away. The real server, logging every request, must keep answering, hold no more log in memory than
 * LOG_BUFFER_BYTES, count the lines it drops in svc_log_lines_dropped_total, and exit on SIGTERM within
 * SHUTDOWN_GRACE_MS: before, it waited forever in its final log flush.
 */

const GRACE_MS = 3000;
// Signal delivery, process teardown and a loaded machine.
const EXIT_MARGIN_MS = 10_000;
const BUFFER_BYTES = 256 * 1024;
// Every request logs its URL: a 12 kB query makes each request log about 12 kB.
const PADDED_URL = `/healthz?padding=${'x'.repeat(12_000)}`;
const CONCURRENCY = 16;

function startLoggingServer(): Promise<ServerProcess> {
  // Debug: two lines per request (arrival and end), so each request's padded arrival line meets the full buffer.
  return ServerProcess.start(['--data-dir', 'memory://', '--log-level', 'debug'], {
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
    LOG_BUFFER_BYTES: String(BUFFER_BYTES),
  });
}

/** Sends `count` padded requests, CONCURRENCY at a time; returns how many were not answered 200. */
async function unanswered(url: string, count: number): Promise<number> {
  let next = 0;
  let failed = 0;
  const loop = async () => {
    while (next++ < count) {
      const response = await fetch(`${url}${PADDED_URL}`).catch(() => undefined);
      await response?.arrayBuffer();
      if (response?.status !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  return failed;
}

/** The value of one series on the server's /metrics, e.g. `svc_log_lines_dropped_total{reason="buffer_full"}`. */
async function sample(url: string, series: string): Promise<number> {
  const value = seriesValue(await (await fetch(`${url}/metrics`)).text(), series);
  if (value === undefined) throw new Error(`/metrics has no ${series}`);
  return value;
}

const dropped = (url: string, reason: string) => sample(url, `svc_log_lines_dropped_total{reason="${reason}"}`);

/** Polls until the server has counted a line lost to the closed output; returns the count then. */
async function firstDrop(url: string): Promise<number> {
  for (;;) {
    const count = await dropped(url, 'output_closed');
    if (count > 0) return count;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A write whose body never completes: in flight until the server cuts its connection. Resolves once the
 * server reads it (its first bytes were sent before a later request's answer), with how it ended.
 */
async function requestNeverCompleted(url: string): Promise<{ ended: Promise<string> }> {
  let sent: () => void;
  const started = new Promise<void>((resolve) => (sent = resolve));
  const ended = new Promise<string>((resolve) => {
    const req = request(`${url}/v4/teams`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '100' } }, (res) =>
      resolve(`answered ${res.statusCode}`),
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.write('{"name":', () => sent());
  });
  await started;
  await (await fetch(`${url}/healthz`)).arrayBuffer();
  return { ended };
}

/** SIGTERM while a write is in flight: the process exits 0 within the grace, cutting that request's connection. */
async function expectExitWithinGrace(server: ServerProcess, url: string): Promise<void> {
  const held = await requestNeverCompleted(url);
  const start = performance.now();
  expect(await server.stop()).toBe(0);
  expect(performance.now() - start).toBeLessThan(GRACE_MS + EXIT_MARGIN_MS);
  expect(await held.ended).toBe('ECONNRESET');
}

describe.skipIf(process.platform !== 'linux')('a log reader that stalls or goes away', () => {
  let server: ServerProcess | undefined;
  afterEach(() => server?.kill9());

  it('stalled: requests are answered, log memory stays bounded, drops are counted, SIGTERM exits within the grace', async () => {
    server = await startLoggingServer();
    const { url } = server.summary;
    server.stopReadingStdout();

    // Fills the pipe, the reader's buffer and the server's log buffer (12 MB of log against well under 1 MB).
    expect(await unanswered(url, 1000)).toBe(0);
    const residentBefore = await sample(url, 'process_resident_memory_bytes');
    const droppedBefore = await dropped(url, 'buffer_full');
    expect(droppedBefore).toBeGreaterThan(0);

    // About 200 MB more of log, none of which the reader takes: far above what the garbage collector
    // may leave unreclaimed (Node 24 sizes its young generation up to 64 MB on a large machine).
    const requests = 16000;
    expect(await unanswered(url, requests)).toBe(0);
    const residentAfter = await sample(url, 'process_resident_memory_bytes');
    // Each request logs two lines; at least its padded "incoming request" line found the buffer full.
    expect((await dropped(url, 'buffer_full')) - droppedBefore).toBeGreaterThanOrEqual(requests);
    // Kept, that log would be over 180 MB; dropped, what remains is the garbage collector's slack.
    expect(residentAfter - residentBefore).toBeLessThan(96 * 1024 * 1024);

    // Neither the stalled log nor a request that never ends holds the process past the grace.
    await expectExitWithinGrace(server, url);
  }, 180_000);

  it('gone: requests are answered, every line after is counted as dropped, SIGTERM exits within the grace', async () => {
    server = await startLoggingServer();
    const { url } = server.summary;
    server.closeStdout();
    // The pipe's read end closes asynchronously: lines written before it did were taken by the kernel, not lost.
    const droppedBefore = await firstDrop(url);

    const requests = 500;
    expect(await unanswered(url, requests)).toBe(0);
    // Two lines per request, every one lost.
    expect((await dropped(url, 'output_closed')) - droppedBefore).toBeGreaterThanOrEqual(2 * requests);
    expect(await dropped(url, 'buffer_full')).toBe(0);

    await expectExitWithinGrace(server, url);
  }, 120_000);
});
