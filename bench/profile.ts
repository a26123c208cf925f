import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { danaOf } from '../test/faults/support.js';
import { autocannonRun, demoStore, expectMcpEmployee, openMcpSession, startReference, writeResults, type LoadTarget } from './lib.js';
import { isMainThreadProfile, LAYERS, layerTimes, type CpuProfile, type Window } from './support/cpu-profile.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';

/*
 * The profile summary of the hot path: where each server's main thread spends a request, by layer, from
 * `node --cpu-prof` under load. The reference (bench/workers/reference-server.ts) and the build of
 * `svc-server serve` on one PostgreSQL schema, each a process of its own; the project silent and at the
 * default log level (lines to /dev/null). Only the windows of load are counted, not start or warm-up.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
// More would be refused with 429 on the MCP column.
const CONNECTIONS = String(MCP_IN_FLIGHT_PER_CREDENTIAL);
const WARMUP_SECONDS = 2;
// 4 samples a millisecond: enough for layers of 1 µs a request over a window's tens of thousands of requests.
const SAMPLE_INTERVAL_US = 250;

const profiling = (dir: string) => ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${SAMPLE_INTERVAL_US}`];
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

interface Profiled {
  name: string;
  target: LoadTarget;
  /** The directory its server writes its profile to when it exits. */
  profileDir: string;
  windows: Window[];
  requests: number;
}

const outDir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
const store = await demoStore('postgres');
const stops: Array<() => Promise<unknown>> = [];
try {
  const key = store.demo.apiKeys.admin!;
  const headers = { 'x-api-key': key };
  const dirOf = (server: string) => join(outDir, server);
  const reference = await startReference(store.envFor('reference'), key, { nodeArgs: profiling(dirOf('reference')) });
  stops.push(() => reference.stop());
  const startProject = async (name: string, logLevel?: string) => {
    const server = await store.startProject(name, { nodeArgs: profiling(dirOf(name)), ...(logLevel ? { logToDevNullAt: logLevel } : {}) });
    stops.push(() => server.stop());
    return server.summary.url;
  };
  const project = await startProject('project');
  const logging = await startProject('logging', 'info');

  const id = await danaOf(project, key);
  const rest = (url: string): LoadTarget => ({ url: `${url}/v4/employees/${id}`, headers });
  const call = await openMcpSession(`${project}/mcp`, headers, { name: 'get_employee', arguments: { id } });
  const mcp = (url: string): LoadTarget => ({ url: `${url}/mcp`, headers: call.callHeaders, post: { body: call.body } });
  for (const url of [project, reference.url]) await expectMcpEmployee(`${url}/mcp`, call, id);
  const profiled = (name: string, server: string, target: LoadTarget): Profiled => ({ name, target, profileDir: dirOf(server), windows: [], requests: 0 });
  const columns = [
    profiled('reference: REST', 'reference', rest(reference.url)),
    profiled('project: REST, silent', 'project', rest(project)),
    profiled('project: REST, at info', 'logging', rest(logging)),
    profiled('reference: MCP (a plain POST route)', 'reference', mcp(reference.url)),
    profiled('project: MCP tools/call (2025-11-25 session)', 'project', mcp(project)),
    profiled('project: v2 GET through the gateway', 'project', { url: `${project}/v2/employees/${id}`, headers: { 'x-api-key': store.demo.legacyKeys.full! } }),
  ];

  for (const column of columns) await autocannonRun(column.target, ['-c', CONNECTIONS, '-d', String(WARMUP_SECONDS)]);
  for (let round = 0; round < ROUNDS; round++) {
    // Every other round in reverse, as measureRounds does: no column always follows the same other.
    for (const column of round % 2 === 0 ? columns : [...columns].reverse()) {
      const result = await autocannonRun(column.target, ['-c', CONNECTIONS, '-d', String(SECONDS)]);
      if (result.errors + result.non2xx > 0) throw new Error(`${column.target.url}: ${result.errors} errors and ${result.non2xx} non-2xx answers`);
      // The window is autocannon's own span, ending now: its start-up is not load.
      const to = monotonicMicros();
      column.windows.push({ from: to - result.duration * 1_000_000, to });
      column.requests += result.requests.total;
    }
  }
  // Each server writes its profile as it exits.
  while (stops.length > 0) await stops.shift()!();

  const profileOf = (dir: string): CpuProfile => {
    const files = readdirSync(dir).filter(isMainThreadProfile);
    if (files.length !== 1) throw new Error(`${dir} holds ${files.length} main-thread CPU profiles, not one`);
    const file = files[0]!;
    return JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  };
  const profiles = new Map<string, CpuProfile>();
  const perRequest = columns.map((column) => {
    const profile = profiles.get(column.profileDir) ?? profileOf(column.profileDir);
    profiles.set(column.profileDir, profile);
    const times = layerTimes(profile, column.windows);
    const span = column.windows.reduce((sum, window) => sum + window.to - window.from, 0);
    const busy = [...times].reduce((sum, [layer, micros]) => (layer === 'idle' ? sum : sum + micros), 0);
    return { times, span, busy, requests: column.requests };
  });

  const micros = (value: number, requests: number) => (value / requests).toFixed(1);
  const rows = [
    ...LAYERS.map((layer) => [
      layer,
      ...perRequest.map(({ times, busy, requests }) => {
        const time = times.get(layer) ?? 0;
        return `${micros(time, requests)} (${Math.round((time / busy) * 100)} %)`;
      }),
    ]),
    ['**busy, µs a request**', ...perRequest.map(({ busy, requests }) => `**${micros(busy, requests)}**`)],
    ['idle, share of the time (the event loop waiting: on PostgreSQL, or for requests)', ...perRequest.map(({ times, span }) => `${Math.round(((times.get('idle') ?? 0) / span) * 100)} %`)],
    ['req/s under the profiler', ...perRequest.map(({ requests, span }) => Math.round(requests / (span / 1_000_000)))],
  ];
  console.log(
    await writeResults('profile', 'npm run bench -- profile', ['main thread, µs a request (share of busy)', ...columns.map((c) => c.name)], rows, [
      `Each server a process of its own on one PostgreSQL schema of the demo data, run with \`node --cpu-prof --cpu-prof-interval=${SAMPLE_INTERVAL_US}\`; autocannon, ${CONNECTIONS} connections (the most MCP requests one key may have in flight; the other columns alike), ${WARMUP_SECONDS} s of warm-up per column, then ${ROUNDS} rounds of ${SECONDS} s per column (BENCH_ROUNDS, BENCH_SECONDS), every other round in reverse order. Only samples inside the load's windows are counted (the profile's clock is the monotonic one this process reads).`,
      'A sample is put in the layer of its innermost frame (bench/support/cpu-profile.ts): a package by its path, node’s own JavaScript by `node:`, native calls by name. Time inside V8’s builtins (property access, promises) counts for the JavaScript that called them. The profiler itself slows each server alike; compare columns, not these figures with the other benchmarks’.',
    ]),
  );
} finally {
  while (stops.length > 0) await stops.shift()!();
  await store.drop();
  rmSync(outDir, { recursive: true, force: true });
}
