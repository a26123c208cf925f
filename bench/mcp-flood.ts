import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type autocannon from 'autocannon';
import { MCP_BATCH_MAX_MESSAGES, MCP_BODY_LIMIT_BYTES, MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';
import { autocannonRun, benchEachBackend, openMcpSession, startBenchServer, type Backend, type LoadTarget, type Row } from './lib.js';

/*
 * One key flooding /mcp beside another key's steady reads: what the flood costs the steady caller.
 * The steady caller (the admin's key) reads GET /v4/me at a fixed rate, alone, then beside the
 * employee's key flooding /mcp in a 2025-11-25 session: with tools/call whoami; with batches of
 * 9,000 whoami calls (~0.8 MB), over the endpoint's body limit; and with single whoami calls just
 * under the limit (padding in `_meta`), which it serves; and, in a 2025-03-26 session (the revision
 * with batches), with the largest batches it serves (MCP_BATCH_MAX_MESSAGES calls). The endpoint serves at most
 * MCP_IN_FLIGHT_PER_CREDENTIAL of one key's requests at once and answers the rest 429 before
 * reading their bodies.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const FLOOD_CONNECTIONS = 32;
/** The steady caller: requests per second over its connections, latency counted from when each was due (autocannon corrects coordinated omission). */
const STEADY_RATE = 100;
const STEADY_CONNECTIONS = 2;
const BATCH_CALLS = 9_000;

const whoami = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
const batchBody = JSON.stringify(Array.from({ length: BATCH_CALLS }, (_, i) => whoami(i)));
const servedBatchBody = JSON.stringify(Array.from({ length: MCP_BATCH_MAX_MESSAGES }, (_, i) => whoami(i)));
const padded = (bytes: number) => JSON.stringify({ ...whoami(1), params: { name: 'whoami', arguments: {}, _meta: { padding: 'x'.repeat(bytes) } } });
/** The largest call the endpoint accepts, within a kilobyte. */
const paddedBody = padded(MCP_BODY_LIMIT_BYTES - 1024);

/** The median time of JSON.parse on the batch's body, in ms: what the server spends before it can refuse it. */
function batchParseMs(): number {
  const times = Array.from({ length: 21 }, () => {
    const start = process.hrtime.bigint();
    JSON.parse(batchBody);
    return Number(process.hrtime.bigint() - start) / 1e6;
  });
  return times.sort((a, b) => a - b)[10]!;
}

/** Answers by status class, from autocannon's result. */
const answered = (result: autocannon.Result, status: '2xx' | '4xx' | '5xx') => (result as unknown as Record<string, number>)[status] ?? 0;

async function run(backend: Backend): Promise<Row[]> {
  const server = await startBenchServer(backend);
  const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-flood-'));
  try {
    const { demo } = server;
    const mcpUrl = `${server.baseUrl}/mcp`;
    const steady: LoadTarget = { url: `${server.baseUrl}/v4/me`, headers: { 'x-api-key': demo.apiKeys.admin } };
    const session = await openMcpSession(mcpUrl, { 'x-api-key': demo.apiKeys.employee }, { name: 'whoami', arguments: {} });
    const batching = await openMcpSession(mcpUrl, { 'x-api-key': demo.apiKeys.employee }, { name: 'whoami', arguments: {} }, '2025-03-26');
    // Too large for a command-line argument: autocannon reads each from a file.
    const batchFile = join(dir, 'batch.json');
    const paddedFile = join(dir, 'padded.json');
    writeFileSync(batchFile, batchBody);
    writeFileSync(paddedFile, paddedBody);

    // Each load must be what it claims before its effect means anything.
    const post = (body: string) => fetch(mcpUrl, { method: 'POST', headers: session.callHeaders, body });
    for (const body of [session.body, paddedBody]) {
      const call = (await (await post(body)).json()) as { result?: { isError?: boolean } };
      if (call.result === undefined || call.result.isError) throw new Error(`whoami answered ${JSON.stringify(call)}`);
    }
    const batch = await post(batchBody);
    const refusal = (await batch.json()) as { error?: { code?: number } };
    if (batch.status !== 413 || refusal.error?.code !== -32700) throw new Error(`the batch answered ${batch.status} ${JSON.stringify(refusal)}`);
    const served = await fetch(mcpUrl, { method: 'POST', headers: batching.callHeaders, body: servedBatchBody });
    const answers = (await served.json()) as unknown[];
    if (served.status !== 200 || answers.length !== MCP_BATCH_MAX_MESSAGES) throw new Error(`the served batch answered ${served.status} ${JSON.stringify(answers)}`);

    const flooding = (opened: { callHeaders: Record<string, string> }): LoadTarget => ({ url: mcpUrl, headers: opened.callHeaders });
    const floods: Array<[string, LoadTarget | undefined, string[] | undefined]> = [
      ['alone', undefined, undefined],
      [`beside ${FLOOD_CONNECTIONS} connections of tools/call whoami`, flooding(session), ['-b', session.body]],
      [`beside ${FLOOD_CONNECTIONS} connections of ${BATCH_CALLS}-call batches, over the body limit`, flooding(session), ['-i', batchFile]],
      [`beside ${FLOOD_CONNECTIONS} connections of the largest whoami calls accepted`, flooding(session), ['-i', paddedFile]],
      [`beside ${FLOOD_CONNECTIONS} connections of ${MCP_BATCH_MAX_MESSAGES}-call 2025-03-26 batches, the largest served`, flooding(batching), ['-b', servedBatchBody]],
    ];
    const steadyLoad = (seconds: number) => ['-c', String(STEADY_CONNECTIONS), '-R', String(STEADY_RATE), '-d', String(seconds)];
    // Unmeasured: the steady path's first requests would otherwise pay its JIT warm-up.
    await autocannonRun(steady, steadyLoad(1));

    const rows: Row[] = [];
    for (const [label, target, body] of floods) {
      // The flood starts a second before the steady run and ends a second after it.
      const flood = target && body && autocannonRun(target, ['-m', 'POST', ...body, '-c', String(FLOOD_CONNECTIONS), '-d', String(SECONDS + 2)]);
      if (flood) await delay(1000);
      const reads = await autocannonRun(steady, steadyLoad(SECONDS));
      const flooded = await flood;
      // No read completed within the run: its latencies are longer than the run, not 0.
      const latency = (ms: number) => (reads.requests.total > 0 ? ms : `> ${SECONDS * 1000}`);
      rows.push([
        backend,
        label,
        reads.requests.total,
        latency(reads.latency.p50),
        latency(reads.latency.p99),
        latency(reads.latency.max),
        reads.errors + reads.non2xx,
        flooded ? Math.round(flooded.requests.average) : '',
        flooded ? `${answered(flooded, '2xx')} / ${answered(flooded, '4xx')} / ${answered(flooded, '5xx') + flooded.errors}` : '',
      ]);
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
}

const mb = (text: string) => (Buffer.byteLength(text) / 1e6).toFixed(2);
// Read before the run: figures from a machine busy with other work are read against it.
const [load] = loadavg();

await benchEachBackend(
  'mcp-flood',
  ['store', 'steady caller (GET /v4/me, another key)', 'reads', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'flood req/s', 'flood 2xx / 4xx / 5xx+failed'],
  run,
  [
    `The steady caller: autocannon at ${STEADY_RATE} req/s over ${STEADY_CONNECTIONS} connections for ${SECONDS} s (BENCH_SECONDS), latency counted from when each request was due (coordinated omission corrected), after 1 s unmeasured; "reads" is how many it completed.`,
    `The flood, with the employee's key in one 2025-11-25 session (one 2025-03-26 session for the served batches, ${MCP_BATCH_MAX_MESSAGES} whoami calls each, run one after another in the POST's one place in flight): autocannon with ${FLOOD_CONNECTIONS} connections, started 1 s before the steady caller and ending 1 s after it.`,
    `A batch (${mb(batchBody)} MB, ${batchParseMs().toFixed(1)} ms of JSON.parse on this machine, median of 21 in the benchmark process) is over the ${MCP_BODY_LIMIT_BYTES / 1024} KiB body limit: 413 from its Content-Length, unread. The largest calls accepted (${mb(paddedBody)} MB) are served (2xx) ${MCP_IN_FLIGHT_PER_CREDENTIAL} at a time per key; the key's other requests answer 429 before their bodies are read.`,
    `Every process on this machine: one server in the benchmark process, each autocannon in a process of its own, on loopback, one server per store; the 1-minute load average when the run began: ${load!.toFixed(1)}.`,
  ],
);
