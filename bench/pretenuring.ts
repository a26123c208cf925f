import { execFileSync } from 'node:child_process';
import { PRETENURING_FLAG } from '../src/kit/runtime-flags.js';
import { danaOf } from '../test/faults/support.js';
import { ServerProcess } from '../test/helpers/server-process.js';
import { seriesValue } from '../test/helpers/prometheus.js';
import { createBenchSchema, measureRounds, pairedRatio, ROUNDS_NOTE, PAIRED_RATIO_NOTE, writeResults, type LoadTarget } from './lib.js';

/*
 * The server process as deployed (the build of `svc-server serve --demo`, on PostgreSQL, each in a
 * schema of its own) as it runs, with V8's allocation-site pretenuring off (src/kit/runtime-flags.ts),
 * beside the same server with it on (node --allocation-site-pretenuring): throughput in turn, and from
 * each server's own /metrics its CPU time and its young-generation collections per request.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const VARIANTS = ['off', 'on'] as const;
type Variant = (typeof VARIANTS)[number];
const PATHS = ['v4', 'v2'] as const;

interface Counters {
  requests: number;
  cpuSeconds: number;
  minorGcSeconds: number;
  minorGcs: number;
}

/** What the server has counted so far; a series not used yet (a route not called yet) reads 0. */
async function counters(url: string): Promise<Counters> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (series: string) => seriesValue(text, series) ?? 0;
  const reads = (route: string) => value(`svc_http_request_duration_seconds_count{route="${route}",method="GET",status="200"}`);
  return {
    requests: reads('/v4/employees/:id') + reads('/v2/employees/:id'),
    cpuSeconds: value('process_cpu_seconds_total'),
    minorGcSeconds: value('nodejs_gc_duration_seconds_sum{kind="minor"}'),
    minorGcs: value('nodejs_gc_duration_seconds_count{kind="minor"}'),
  };
}

/** Server CPU, young-GC pause and requests per young GC, per request answered between two counts. */
function perRequest(variant: Variant, before: Counters, after: Counters) {
  const requests = after.requests - before.requests;
  const gcs = after.minorGcs - before.minorGcs;
  // The series names must match what the server writes, or nothing here would mean anything.
  if (!(requests > 0) || !(gcs > 0)) throw new Error(`pretenuring ${variant}: /metrics counted ${requests} reads and ${gcs} young GCs; has a metric name changed?`);
  const micros = (seconds: number) => ((seconds * 1e6) / requests).toFixed(1);
  return { cpu: micros(after.cpuSeconds - before.cpuSeconds), gc: micros(after.minorGcSeconds - before.minorGcSeconds), requestsPerGc: Math.round(requests / gcs) };
}

async function startServer(variant: Variant): Promise<{ server: ServerProcess; stop(): Promise<void> }> {
  const schema = await createBenchSchema();
  const server = await ServerProcess.start(['--demo'], { DATABASE_URL: schema.url, SVC_SECRET_KEY: 'd'.repeat(64) }, {
    nodeArgs: variant === 'on' ? [PRETENURING_FLAG] : [],
  }).catch(async (error: unknown) => {
    await schema.drop();
    throw error;
  });
  return {
    server,
    async stop() {
      await server.stop();
      await schema.drop();
    },
  };
}

// The build of the sources as they are now: a stale one would measure other code.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
const started: Partial<Record<Variant, Awaited<ReturnType<typeof startServer>>>> = {};
try {
  for (const variant of VARIANTS) started[variant] = await startServer(variant);
  const urls = { off: started.off!.server.summary.url, on: started.on!.server.summary.url };
  const targets: Record<string, LoadTarget> = {};
  for (const variant of VARIANTS) {
    const demo = started[variant]!.server.summary.demo!;
    const dana = await danaOf(urls[variant], demo.apiKeys.admin!);
    targets[`v4 ${variant}`] = { url: `${urls[variant]}/v4/employees/${dana}`, headers: { 'x-api-key': demo.apiKeys.admin! } };
    targets[`v2 ${variant}`] = { url: `${urls[variant]}/v2/employees/${dana}`, headers: { 'x-api-key': demo.legacyKeys.full! } };
  }
  const countBoth = async () => ({ off: await counters(urls.off), on: await counters(urls.on) });
  const before = await countBoth();
  const measured = await measureRounds(targets, SECONDS);
  const after = await countBoth();

  const rows: Array<Array<string | number>> = [];
  for (const variant of VARIANTS) {
    const { cpu, gc, requestsPerGc } = perRequest(variant, before[variant], after[variant]);
    const label = variant === 'off' ? 'pretenuring off (as svc-server runs)' : `pretenuring on (node ${PRETENURING_FLAG})`;
    for (const path of PATHS) {
      const m = measured[`${path} ${variant}`]!;
      rows.push([label, `GET /${path}/employees/{id}`, m.requestsPerSecond, m.p50, m.p99, m.errors, '', '', '']);
    }
    rows.push([label, 'both reads, whole run', '', '', '', '', cpu, gc, requestsPerGc]);
  }
  for (const path of PATHS) {
    rows.push([`ratio off ÷ on`, path, pairedRatio(measured[`${path} off`]!, measured[`${path} on`]!), '', '', '', '', '', '']);
  }
  const text = await writeResults(
    'pretenuring',
    'npm run bench -- pretenuring',
    ['server', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'server CPU µs/req', 'young-generation GC µs/req', 'requests per young GC'],
    rows,
    [
      `Two \`svc-server serve --demo\` processes (the build, \`node dist/src/main.js\`, as \`npm start\` runs it) on PostgreSQL, each in its own schema; autocannon in a separate process, 10 connections, ${SECONDS} s per run, on loopback.`,
      ROUNDS_NOTE,
      PAIRED_RATIO_NOTE,
      'Server CPU and young-generation GC: from each server’s own /metrics (process_cpu_seconds_total, nodejs_gc_duration_seconds{kind="minor"}) over every run of both reads, per request answered. GC time is the pause the main thread sees.',
    ],
  );
  process.stdout.write(text);
} finally {
  for (const variant of VARIANTS) await started[variant]?.stop();
}
