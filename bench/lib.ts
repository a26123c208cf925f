import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/kit/config.js';
import { createCore, type Core } from '../src/app/core.js';
import { createLogger } from '../src/app/base-services.js';
import { seedDemo, type DemoData } from '../src/domain/demo.js';
import { buildApp } from '../src/app/http-app.js';
import { createLogOutput } from '../src/kit/log-output.js';
import { ServerProcess, type ServeOptions } from '../test/helpers/server-process.js';

export type Backend = 'pglite' | 'postgres';
/** Every benchmark server's SVC_SECRET_KEY: the same, so that processes on one store read each other's data. */
export const SECRET_KEY = 'b'.repeat(64);
export const POSTGRES_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchServer {
  core: Core;
  /** The throwaway PostgreSQL schema (undefined on PGlite). */
  schema: string | undefined;
  demo: DemoData;
  baseUrl: string;
  close(): Promise<void>;
}

/** The benchmark database's URL with `schema` as the search path: what a server process or second core connects with. */
export function schemaUrl(schema: string): string {
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** A throwaway schema on the benchmark database; drop() removes it with everything in it. */
export async function createBenchSchema(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  return {
    name,
    url: schemaUrl(name),
    async drop() {
      await admin.query(`DROP SCHEMA ${name} CASCADE`);
      await admin.end();
    },
  };
}

/**
 * A real server on loopback, on an in-memory PGlite or a throwaway PostgreSQL schema. Silent by
 * default; `logLevel` logs as a deployment does (the service's redaction and serializers), to /dev/null.
 */
export async function startBenchServer(backend: Backend, options: { logLevel?: string } = {}): Promise<BenchServer> {
  const schema = backend === 'postgres' ? await createBenchSchema() : undefined;
  const config = loadConfig({}, {
    dataDir: 'memory://',
    databaseUrl: backend === 'postgres' ? POSTGRES_URL : undefined,
    secretKey: SECRET_KEY,
    logLevel: options.logLevel ?? 'silent',
    port: 0,
  });
  // Logging as deployed: the core's own output, batched and asynchronous, to /dev/null instead of stdout.
  const output = options.logLevel ? createLogOutput(config.logBufferBytes, openSync('/dev/null', 'w')) : undefined;
  const logger = output ? createLogger(config, output) : pino({ level: 'silent' });
  const core = await createCore(config, { logger, schema: schema?.name });
  const demo = await seedDemo(core.db);
  const app = await buildApp(core);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  return {
    core,
    schema: schema?.name,
    demo,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await app.close();
      await core.close();
      await output?.end(1000);
      await schema?.drop();
    },
  };
}

const MCP_PROTOCOL_VERSION = '2025-11-25';

/**
 * Opens an MCP session (initialize, initialized) and answers the headers and body of one tools/call
 * in it, for a load generator to repeat.
 */
export async function openMcpSession(
  mcpUrl: string,
  key: Record<string, string>,
  call: { name: string; arguments: Record<string, unknown> },
  protocolVersion: string = MCP_PROTOCOL_VERSION,
): Promise<{ callHeaders: Record<string, string>; body: string }> {
  const headers = { ...key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const post = (body: unknown, extra: Record<string, string> = {}) =>
    fetch(mcpUrl, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.arrayBuffer();
  if (!sessionId) throw new Error(`initialize answered ${init.status} without a session`);
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sessionId })).arrayBuffer();
  return {
    callHeaders: { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: call }),
  };
}

/** Throws unless the tools/call get_employee POSTed to `url` answers employee `id` (not an error result). */
export async function expectMcpEmployee(url: string, call: { callHeaders: Record<string, string>; body: string }, id: string): Promise<void> {
  const answer = (await (await fetch(url, { method: 'POST', headers: call.callHeaders, body: call.body })).json()) as {
    result?: { isError?: boolean; structuredContent?: { id?: string } };
  };
  if (answer.result?.isError || answer.result?.structuredContent?.id !== id) throw new Error(`${url}: get_employee answered ${JSON.stringify(answer)}`);
}

/** A 2026-07-28 tools/call as a conforming client sends it: no session, the `_meta` envelope and the routing headers. */
export function modernToolCall(
  key: Record<string, string>,
  call: { name: string; arguments: Record<string, unknown> },
): { callHeaders: Record<string, string>; body: string } {
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
  };
  return {
    callHeaders: {
      ...key,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': call.name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { ...call, _meta: envelope } }),
  };
}

export interface Measurement {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Mean latency in ms, to two decimals: p50 and p99 come in whole milliseconds. */
  mean: number;
  errors: number;
  /**
   * CPU time of the server per request answered, in µs: of this process, or of the target's serverPid. What
   * a request costs the server (on PGlite the database too), which throughput shows only when the server
   * is the bottleneck. Meaningless where the server is another process not named (soak) or where loads overlap.
   */
  cpuMicrosPerRequest: number;
  /**
   * CPU time of this machine's PostgreSQL processes per request answered, in µs (0 when none runs here): what a
   * request costs the database server, which bounds throughput once the database's cores are busy. Counts
   * whatever else the database did meanwhile, less the share of a backend that exited within the run.
   */
  databaseCpuMicrosPerRequest: number;
}

const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

/** The CPUs this process may run on, from the kernel (a container may allow fewer, or others, than cpus() lists). */
function allowedCpus(): number[] {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
  return list.split(',').flatMap((range) => {
    const [first, last = first] = range.split('-').map(Number);
    return first === undefined || Number.isNaN(first) ? [] : Array.from({ length: last! - first + 1 }, (_, i) => first + i);
  });
}

/**
 * BENCH_PIN=1: this process (the servers) on the last CPU, the load generators on the others, as a
 * server with a core of its own; PostgreSQL runs where the kernel puts it. Unpinned, the load
 * generator shares the server's cores and caches, and a path touching more memory pays more for it.
 */
const placement = (() => {
  if (process.env.BENCH_PIN !== '1') return undefined;
  const cpuIds = allowedCpus();
  const server = cpuIds.at(-1);
  if (server === undefined || cpuIds.length < 2) throw new Error(`BENCH_PIN needs at least two CPUs; this process may use ${cpuIds.join(',') || 'none'}`);
  execFileSync('taskset', ['-a', '-p', '-c', String(server), String(process.pid)], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { server, apart: cpuIds.slice(0, -1).join(',') };
})();

/** A command to start apart from the servers (a load generator, a proxy of its own): on the other CPUs when pinned. */
export const apartFromServers = (command: string, args: string[]): [string, string[]] =>
  placement ? ['taskset', ['-c', placement.apart, command, ...args]] : [command, args];

const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU time (user and system) used so far, in µs: of this process, or from the kernel's count of another's. */
function cpuMicros(pid?: number): number {
  if (pid === undefined) {
    const { user, system } = process.cpuUsage();
    return user + system;
  }
  // /proc/<pid>/stat: after the command's closing parenthesis, utime and stime are the 12th and 13th fields.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_SECOND;
}

/** CPU time used so far by each process named `postgres` that this user may see, in µs, by pid. */
function postgresCpuMicros(): Map<number, number> {
  const used = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8') === 'postgres\n') used.set(Number(entry), cpuMicros(Number(entry)));
    } catch {
      // Exited between the listing and the read.
    }
  }
  return used;
}

/**
 * Both CPU counters at the start of a run; `perRequest` divides what each used since by the requests answered
 * (see Measurement). The database's is summed over its processes, each from its own start value (0 for one
 * started since): pooled connections come and go, and a backend that exited within the run takes its share with it.
 */
export function cpuCounters(serverPid?: number) {
  const server = cpuMicros(serverPid);
  const database = postgresCpuMicros();
  return {
    perRequest: (requests: number) => {
      let databaseUsed = 0;
      for (const [pid, used] of postgresCpuMicros()) databaseUsed += used - (database.get(pid) ?? 0);
      const perRequest = (micros: number) => Math.round(micros / Math.max(1, requests));
      return { cpuMicrosPerRequest: perRequest(cpuMicros(serverPid) - server), databaseCpuMicrosPerRequest: perRequest(databaseUsed) };
    },
  };
}

/** autocannon in a process of its own (apart from the servers when pinned), with `load` as its -c, -d or -a options. */
export async function autocannonRun({ url, headers, post }: Pick<LoadTarget, 'url' | 'headers' | 'post'>, load: string[]): Promise<autocannon.Result> {
  const headerArgs = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
  const postArgs = post ? ['-m', 'POST', '-b', post.body] : [];
  const { stdout } = await promisify(execFile)(...apartFromServers(process.execPath, [AUTOCANNON, '--json', ...load, ...headerArgs, ...postArgs, url]), {
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as autocannon.Result;
}

/** Unmeasured load before a URL's first row, so no row pays the JIT's warm-up of the code it is the first to run. */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const warmed = new Set<string>();

/**
 * Fixed-duration load with autocannon in its own process, so the load generator does not
 * share the server's event loop; any non-2xx counts as an error. A URL's first run is warmed up.
 */
export async function measure(
  url: string,
  headers: Record<string, string>,
  seconds = 5,
  connections = 10,
  post?: { body: string },
  serverPid?: number,
): Promise<Measurement> {
  const run = (duration: number) => autocannonRun({ url, headers, post }, ['-c', String(connections), '-d', String(duration)]);
  if (WARMUP_SECONDS > 0 && !warmed.has(url)) await run(WARMUP_SECONDS);
  warmed.add(url);
  const counters = cpuCounters(serverPid);
  const result = await run(seconds);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.average,
    errors: result.errors + result.non2xx,
    ...counters.perRequest(result.requests.total),
  };
}

export interface LoadTarget {
  url: string;
  headers: Record<string, string>;
  post?: { body: string };
  /** The server's own process, when it is not this one: its CPU is what cpuMicrosPerRequest counts. */
  serverPid?: number;
}

/** A load measureRounds starts through a command of its own instead of autocannon (pgbench: a statement with no server in front). */
export interface OwnLoad {
  measure(seconds: number): Promise<Measurement>;
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/**
 * The targets measured in turn, round after round, every other round in reverse (BENCH_ROUNDS, 3 by default); each gets its run of
 * median req/s and the errors of all its runs. Ratios compare targets measured side by side: on this
 * machine one 5 s run of the same server swung by up to 30 % from the next.
 */
export async function measureRounds<K extends string>(
  targets: Record<K, LoadTarget | OwnLoad>,
  seconds: number,
  connections = 10,
): Promise<Record<K, RoundsMeasurement>> {
  const names = Object.keys(targets) as K[];
  const runs = new Map<K, Measurement[]>(names.map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Every other round in reverse: a row always measured after another would carry what that one left behind.
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const target = targets[name];
      runs.get(name)!.push('measure' in target ? await target.measure(seconds) : await measure(target.url, target.headers, seconds, connections, target.post, target.serverPid));
    }
  }
  const median = (all: Measurement[]): RoundsMeasurement => {
    const sorted = [...all].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    return {
      ...sorted[Math.floor((sorted.length - 1) / 2)]!,
      errors: all.reduce((sum, run) => sum + run.errors, 0),
      perRound: all.map((run) => run.requestsPerSecond),
      cpuPerRound: all.map((run) => run.cpuMicrosPerRequest),
    };
  };
  return Object.fromEntries(names.map((name) => [name, median(runs.get(name)!)])) as Record<K, RoundsMeasurement>;
}

/** A row of measureRounds: its median run, and the req/s and CPU µs per request of every round, in order. */
export interface RoundsMeasurement extends Measurement {
  perRound: number[];
  cpuPerRound: number[];
}

/** The median of per-round ratios, then their range in brackets. */
function medianWithRange(ratios: number[]): string {
  const sorted = [...ratios].sort((x, y) => x - y);
  const middle = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return `${middle.toFixed(2)} (${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)})`;
}

/**
 * `a`'s throughput over `b`'s as the median of the ratios within each round, with their range: rows of
 * one round run back to back, so a round's ratio cancels what the machine's speed did meanwhile (a
 * bare route's throughput halved within one session here), which a ratio of two medians does not.
 */
export function pairedRatio(a: RoundsMeasurement, b: RoundsMeasurement): string {
  return medianWithRange(a.perRound.map((rps, round) => rps / b.perRound[round]!));
}

/**
 * `a`'s requests per CPU-second of the server over `b`'s (b's CPU per request over a's), paired by
 * round as pairedRatio: the throughput ratio the two would reach were the server's CPU the only limit.
 */
export function capacityRatio(a: RoundsMeasurement, b: RoundsMeasurement): string {
  return medianWithRange(a.cpuPerRound.map((cpu, round) => b.cpuPerRound[round]! / cpu));
}

/** How the rows of measureRounds were chosen, for a benchmark's notes. */
export const ROUNDS_NOTE = `Each row: the median-throughput run of ${ROUNDS} rounds in which the rows were measured in turn, every other round in reverse order (BENCH_ROUNDS); its errors are those of all its runs.`;

/** How pairedRatio's figures read, for the notes of a benchmark that quotes them. */
export const PAIRED_RATIO_NOTE = `A ratio (pairedRatio): the median of its ${ROUNDS} ratios within a round, then their range in brackets; rows of one round run back to back.`;

/** What a run writes, so a build is not called edited for holding the results of the run that measures it. */
const RESULTS_FILES = [':!bench/RESULTS.md', ':!bench/results'];

/** A build as a results table names it. */
export interface BuildDescription {
  root: string;
  /** Its commit, with " edited (root)" when its tree differs; the path if it is no git checkout. */
  label: string;
  /** How it differs from its commit (staged or not): the changed lines, or a count of them when long. */
  edits?: string;
}

export function describeBuild(root: string): BuildDescription {
  const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const diff = (...args: string[]) => git('diff', '--no-ext-diff', '--no-color', ...args, 'HEAD', '--', '.', ...RESULTS_FILES);
  let commit: string;
  let files: string;
  try {
    commit = git('rev-parse', '--short', 'HEAD');
    files = diff('--name-only');
  } catch {
    return { root, label: root };
  }
  if (files === '') return { root, label: commit };
  const lines = diff('--unified=0')
    .split('\n')
    .filter((line) => /^[-+]/.test(line) && !/^(--- a\/|\+\+\+ b\/|--- \/dev\/null|\+\+\+ \/dev\/null)/.test(line))
    .map((line) => line.replace(/^([-+])\s+/, '$1 '));
  // A line holding a backtick gets a longer fence, as Markdown allows.
  const shown = lines.map((line) => (line.includes('`') ? `\`\` ${line} \`\`` : `\`${line}\``)).join(' ');
  const edits = lines.length > 0 && shown.length <= 400 ? `${files.split('\n').join(', ')}, ${shown}` : diff('--shortstat') || files;
  return { root, label: `${commit} edited (${root})`, edits };
}

/** A results note per edited build, saying how it differs from its commit. */
export const editedBuildNotes = (builds: readonly BuildDescription[]): string[] =>
  builds.flatMap(({ label, edits }) => (edits ? [`${label} differs from its commit: ${edits}.`] : []));

/** How capacityRatio's figures read, for the notes of a benchmark that quotes them: whose CPU is divided by whose. */
export const capacityRatioNote = (divided = 'the second row’s', by = 'the first’s', whose = 'this process’s') =>
  `A capacity ratio (capacityRatio): ${divided} server CPU per request over ${by}, paired by round like a throughput ratio; the throughput ratio they would reach if the server’s CPU were all that limited them. CPU µs/req: ${whose} CPU time (user and system) over the requests answered.`;
export const CAPACITY_RATIO_NOTE = capacityRatioNote();

export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/**
 * How fast this machine serves HTTP at all: machines of one kind have run the same code 3–4× apart,
 * so a figure is read against this. A bare Fastify route answering constant JSON, loaded as every row is.
 */
async function machineSpeed(): Promise<number> {
  const bare = Fastify();
  bare.get('/', () => ({ hello: 'world' }));
  const url = await bare.listen({ host: '127.0.0.1', port: 0 });
  try {
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) runs.push((await measure(url, {}, 3)).requestsPerSecond);
    return runs.sort((a, b) => a - b)[1]!;
  } finally {
    await bare.close();
  }
}

/**
 * A setting as a results file may show it: a URL without its passwords (BENCH_DATABASE_URL may hold one,
 * after the user or as node-postgres's `password` and `sslpassword` parameters).
 */
function shownSetting(value: string): string {
  if (!value.includes('://')) return value;
  try {
    const url = new URL(value);
    if (url.password) url.password = '***';
    for (const name of [...url.searchParams.keys()]) if (/password/i.test(name)) url.searchParams.set(name, '***');
    return url.toString();
  } catch {
    return '***';
  }
}

/** The BENCH_ settings of this run as they would be typed before its command (a password shown as ***). */
export const benchSettings = (env: NodeJS.ProcessEnv = process.env) =>
  Object.entries(env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${shownSetting(value ?? '')} `)
    .join('');

/** A pinned run's results sit beside the unpinned ones, not over them. */
const resultsName = (name: string) => (placement ? `${name}-pinned` : name);

/** Writes bench/results/<name>.md (<name>-pinned.md when pinned), headed by the command, the machine and its speed measured after the run. */
export async function writeResults(name: string, command: string, header: string[], rows: Array<Array<string | number>>, notes: string[] = []): Promise<string> {
  const speed = await machineSpeed();
  const table = [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  const text = [
    `# ${resultsName(name)}`,
    '',
    `- Command: \`${benchSettings()}${command}\``,
    `- Machine: ${machine()}`,
    `- Placement: ${placement ? `BENCH_PIN=1, the servers on CPU ${placement.server}, the load generators on CPUs ${placement.apart}, PostgreSQL unpinned; the machine speed below measured so too` : 'unpinned: servers, load generators and PostgreSQL share every CPU'}`,
    `- Machine speed: ${speed} req/s from a bare Fastify route answering constant JSON (10 connections, median of three 3 s runs after the benchmark)`,
    `- Date: ${new Date().toISOString().slice(0, 10)}`,
    '',
    table,
    '',
    ...notes,
    '',
  ].join('\n');
  writeFileSync(new URL(`./results/${resultsName(name)}.md`, import.meta.url), text);
  return text;
}

/** One row of a results table. */
export type Row = Array<string | number>;

/** The stores a run measures: both by default, or BENCH_BACKENDS=pglite|postgres. */
export function benchBackends(): Backend[] {
  return (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',') as Backend[];
}

/** Runs `run` on every store in turn and writes one table `bench/results/<name>.md`. */
export async function benchEachBackend(
  name: string,
  header: string[],
  run: (backend: Backend) => Promise<Row[]>,
  notes: string[],
): Promise<void> {
  const rows: Row[] = [];
  for (const backend of benchBackends()) rows.push(...(await run(backend)));
  console.log(await writeResults(name, `npm run bench -- ${name}`, header, rows, notes));
}

/** POSTs `bodies` in turn (each request its own body) from a worker process, 10 connections, for `seconds`. */
export async function postLoop(url: string, headers: Record<string, string>, bodies: unknown[], seconds: number): Promise<Measurement> {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-')), 'spec.json');
  writeFileSync(file, JSON.stringify({ url, headers, bodies, seconds, connections: 10 }));
  const counters = cpuCounters();
  const { stdout } = await promisify(execFile)(...apartFromServers(process.execPath, ['--import', 'tsx', new URL('./workers/post-loop.ts', import.meta.url).pathname, file]), {
    maxBuffer: 16 * 1024 * 1024,
  });
  const { exhausted, requests, ...result } = JSON.parse(stdout) as Omit<Measurement, 'cpuMicrosPerRequest' | 'databaseCpuMicrosPerRequest'> & {
    exhausted: boolean;
    requests: number;
  };
  if (exhausted) throw new Error('the load used every body before its time was up: give it more bodies');
  return { ...result, ...counters.perRequest(requests) };
}

/*
 * The server processes that bench/reference.ts and bench/instructions.ts compare, each a process of its own: the build of
 * `svc-server serve` on the demo data, and the reference (bench/workers/reference-server.ts) beside it.
 */

const REFERENCE_SERVER = fileURLToPath(new URL('./workers/reference-server.ts', import.meta.url));

/**
 * Where each server process keeps the demo data: one PostgreSQL schema shared by all, or on PGlite,
 * which is single-process, a copy each of the directory the seeding server left.
 */
export async function demoStore(backend: Backend) {
  const schema = backend === 'postgres' ? await createBenchSchema() : undefined;
  const root = mkdtempSync(join(tmpdir(), 'bench-servers-'));
  const seeded = join(root, 'seeded');
  const envFor = (copy: string): Record<string, string> => {
    if (schema) return { DATABASE_URL: schema.url };
    const dir = join(root, copy);
    if (copy !== 'seeded') cpSync(seeded, dir, { recursive: true });
    return { DATA_DIR: dir };
  };
  const seeding = await ServerProcess.start(['--demo'], { ...envFor('seeded'), SVC_SECRET_KEY: SECRET_KEY });
  await seeding.stop();
  return {
    demo: seeding.summary.demo!,
    envFor,
    /** The build of `svc-server serve` on the copy named `copy`. */
    startProject: (copy: string, options: ServeOptions = {}): Promise<ServerProcess> =>
      ServerProcess.start([], { ...envFor(copy), SVC_SECRET_KEY: SECRET_KEY }, options),
    async drop() {
      await schema?.drop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The reference server on `env`'s store (under `launcher`, with node's own `nodeArgs`, if given); resolves with its URL and how to stop it. */
export async function startReference(
  env: Record<string, string>,
  key: string,
  { launcher = [], nodeArgs = [], startupMs = 90_000 }: Pick<ServeOptions, 'launcher' | 'nodeArgs' | 'startupMs'> = {},
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const [command, ...args] = [...launcher, process.execPath, ...nodeArgs, '--import', 'tsx', REFERENCE_SERVER];
  const child = spawn(command!, args, {
    env: { ...process.env, ...env, REFERENCE_KEY: key, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the reference server did not start within ${startupMs} ms`));
    }, startupMs);
    child.stdout.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString().trim());
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the reference server exited with ${String(code)} before listening`));
    });
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
