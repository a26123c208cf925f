import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PRETENURING_FLAG } from '../src/runtime-flags.js';
import { danaOf } from '../test/faults/support.js';
import { startServeProcess, type ServerProcess } from '../test/faults/server-process.js';
import { measureRounds, pairedRatio, POSTGRES_URL, ROUNDS_NOTE, PAIRED_RATIO_NOTE, writeResults, type LoadTarget } from './lib.js';

/*
 * The server process as deployed (the build of `svc-server serve --demo`, on PostgreSQL, each in a
 * schema of its own) as it runs, with V8's allocation-site pretenuring off (src/runtime-flags.ts),
 * beside the same server with it on (node --allocation-site-pretenuring): throughput in turn, and from
 * each server's own /metrics its CPU time and its young-generation collections per request.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

/** A sample's value in Prometheus text, labels written as the registry writes them; a series not yet used reads 0. */
function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

interface Counters {
  requests: number;
  cpuSeconds: number;
  minorGcSeconds: number;
  minorGcs: number;
}

async function counters(url: string): Promise<Counters> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const requests = (route: string) => sample(text, `svc_http_request_duration_seconds_count{route="${route}",method="GET",status="200"}`);
  return {
    requests: requests('/v4/employees/:id') + requests('/v2/employees/:id'),
    cpuSeconds: sample(text, 'process_cpu_seconds_total'),
    minorGcSeconds: sample(text, 'nodejs_gc_duration_seconds_sum{kind="minor"}'),
    minorGcs: sample(text, 'nodejs_gc_duration_seconds_count{kind="minor"}'),
  };
}

async function startServer(nodeArgs: string[]): Promise<{ server: ServerProcess; drop(): Promise<void> }> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const server = await startServeProcess(['--demo'], { DATABASE_URL: url.toString(), SVC_SECRET_KEY: 'd'.repeat(64) }, 90_000, { compiled: true, nodeArgs });
  return {
    server,
    async drop() {
      await server.stop();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    },
  };
}

// The build of the sources as they are now: a stale one would measure other code.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
const off = await startServer([]);
let on: Awaited<ReturnType<typeof startServer>> | undefined;
try {
  on = await startServer([PRETENURING_FLAG]);
  const variants = { off, on };
  const targets: Record<string, LoadTarget> = {};
  for (const [variant, { server }] of Object.entries(variants)) {
    const { url, demo } = server.summary;
    const dana = await danaOf(url, demo!.apiKeys.admin!);
    targets[`v4 ${variant}`] = { url: `${url}/v4/employees/${dana}`, headers: { 'x-api-key': demo!.apiKeys.admin! } };
    targets[`v2 ${variant}`] = { url: `${url}/v2/employees/${dana}`, headers: { 'x-api-key': demo!.legacyKeys.full! } };
  }
  const before = { off: await counters(variants.off.server.summary.url), on: await counters(variants.on.server.summary.url) };
  const measured = await measureRounds(targets, SECONDS);
  const after = { off: await counters(variants.off.server.summary.url), on: await counters(variants.on.server.summary.url) };

  const perRequest = (variant: 'off' | 'on') => {
    const requests = after[variant].requests - before[variant].requests;
    // The series names must match what the server writes, or nothing here would mean anything.
    if (!(requests > 0) || !(after[variant].minorGcs > before[variant].minorGcs)) {
      throw new Error(`pretenuring ${variant}: /metrics counted ${requests} reads and no young GC; has a metric name changed?`);
    }
    const micros = (seconds: number) => ((seconds * 1e6) / requests).toFixed(1);
    return {
      cpu: micros(after[variant].cpuSeconds - before[variant].cpuSeconds),
      gc: micros(after[variant].minorGcSeconds - before[variant].minorGcSeconds),
      requestsPerGc: Math.round(requests / (after[variant].minorGcs - before[variant].minorGcs)),
    };
  };
  const rows: Array<Array<string | number>> = [];
  for (const variant of ['off', 'on'] as const) {
    const { cpu, gc, requestsPerGc } = perRequest(variant);
    const label = variant === 'off' ? 'pretenuring off (as svc-server runs)' : `pretenuring on (node ${PRETENURING_FLAG})`;
    for (const path of ['v4', 'v2'] as const) {
      const m = measured[`${path} ${variant}`]!;
      rows.push([label, path === 'v4' ? 'GET /v4/employees/{id}' : 'GET /v2/employees/{id}', m.requestsPerSecond, m.p50, m.p99, m.errors, '', '', '']);
    }
    rows.push([label, 'both reads, whole run', '', '', '', '', cpu, gc, requestsPerGc]);
  }
  for (const path of ['v4', 'v2'] as const) {
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
  await off.drop();
  await on?.drop();
}
