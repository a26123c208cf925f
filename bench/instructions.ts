import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { danaOf } from '../test/faults/support.js';
import { autocannonRun, demoStore, expectMcpEmployee, openMcpSession, startReference, writeResults, type LoadTarget } from './lib.js';

/*
 * Work per request, counted instead of timed. Each server runs under valgrind's callgrind, which counts
 * the instructions the process executes and simulates its first-level caches: the same figures whatever
 * else the machine is doing, where a throughput ratio on these machines swings by a third from one run to
 * the next. One connection, one request at a time, so every request is a turn of the event loop of its
 * own in every server. Counted: the server's main thread (JavaScript, node's HTTP and the pg client)
 * between a reset after the warm-up and a dump after the counted requests. V8's compiler and GC helper
 * threads are left out: under valgrind they mostly go on compiling the warm-up's code. PostgreSQL only:
 * PGlite's engine runs inside the server process and would be counted as the server's work. Silent only:
 * log lines are written in batches of 10 ms, and a server slowed fifty-fold by valgrind writes each alone.
 */

const WARMUP_REQUESTS = Number(process.env.BENCH_WARMUP_REQUESTS ?? 2000);
const COUNTED_REQUESTS = Number(process.env.BENCH_COUNTED_REQUESTS ?? 1000);
const COUNTED_WINDOWS = Number(process.env.BENCH_COUNTED_WINDOWS ?? 5);
const STARTUP_MS = 600_000;
const CONTROL_TIMEOUT_MS = 60_000;
const DUMP_WAIT_MS = 120_000;

interface Counts {
  instructions: number;
  /** Simulated first-level misses: instruction fetches, data reads and data writes. */
  l1Misses: number;
}

interface CountedServer {
  pid: number;
  /** The callgrind files of this server: `<prefix>.<part>-<thread>`, a part per dump. */
  prefix: string;
  /** Dumps asked of it so far: the next dump is part dumps + 1. */
  dumps: number;
}

function requireValgrind(): void {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('bench/instructions.ts needs valgrind (Debian: apt-get install -y valgrind)');
  }
}

/** valgrind's command line for the server called `name` in `dir`; its own messages go to a file, not the server's stderr. */
const underCallgrind = (dir: string, name: string) => [
  'valgrind',
  '--tool=callgrind',
  '--cache-sim=yes',
  '--separate-threads=yes',
  // V8 writes and rewrites machine code on the heap: every such write must drop valgrind's translation of it.
  '--smc-check=all-non-file',
  `--callgrind-out-file=${join(dir, name)}.%p`,
  `--log-file=${join(dir, name)}.%p.log`,
];

/** `requests` requests to `target`, one at a time; any failure throws. */
async function load(target: LoadTarget, requests: number): Promise<void> {
  const result = await autocannonRun(target, ['-c', '1', '-a', String(requests)]);
  if (result.errors + result.non2xx > 0) throw new Error(`${target.url}: ${result.errors} errors and ${result.non2xx} non-2xx answers`);
}

/**
 * Dumps `server`'s counters, which also resets them, and answers the main thread's totals of that part
 * (thread 01 is node's main thread). callgrind_control exits 0 whatever happened: its "OK." tells.
 */
async function dump(server: CountedServer): Promise<Counts> {
  const said = execFileSync('callgrind_control', ['--dump', String(server.pid)], { encoding: 'utf8', timeout: CONTROL_TIMEOUT_MS });
  if (!said.includes('OK.')) throw new Error(`callgrind_control --dump ${server.pid}: ${said.trim()}`);
  const file = `${server.prefix}.${++server.dumps}-01`;
  const deadline = Date.now() + DUMP_WAIT_MS;
  let text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  // The file is complete once its closing totals line is written.
  while (!/^totals: /m.test(text)) {
    if (Date.now() > deadline) throw new Error(`callgrind wrote no complete ${file} within ${DUMP_WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  }
  const events = /^events: (.+)$/m.exec(text)?.[1]?.split(' ') ?? [];
  const summary = /^summary: (.+)$/m.exec(text)?.[1]?.split(' ').map(Number) ?? [];
  const value = (event: string) => {
    const at = events.indexOf(event);
    if (at < 0 || summary[at] === undefined) throw new Error(`${file} has no ${event} total`);
    return summary[at];
  };
  return { instructions: value('Ir'), l1Misses: value('I1mr') + value('D1mr') + value('D1mw') };
}

interface Windows {
  /** The window of median instructions: a window holding a rare event (an old-generation collection) moves it little. */
  median: Counts;
  /** The fewest and most instructions a request of any window. */
  least: number;
  most: number;
}

/**
 * The counts per request of `target` on `server`: warmed up, a dump to reset the counters, then
 * COUNTED_WINDOWS windows of the counted requests, each dumped: one window alone may hold a rare event
 * (an old-generation collection, a batch a timer writes) that a run of one window would charge to every request.
 */
async function countPerRequest(server: CountedServer, target: LoadTarget): Promise<Windows> {
  await load(target, WARMUP_REQUESTS);
  await dump(server);
  const windows: Counts[] = [];
  for (let i = 0; i < COUNTED_WINDOWS; i++) {
    await load(target, COUNTED_REQUESTS);
    const counted = await dump(server);
    windows.push({ instructions: counted.instructions / COUNTED_REQUESTS, l1Misses: counted.l1Misses / COUNTED_REQUESTS });
  }
  windows.sort((a, b) => a.instructions - b.instructions);
  return { median: windows[Math.floor(windows.length / 2)]!, least: windows[0]!.instructions, most: windows.at(-1)!.instructions };
}

requireValgrind();
// The build of the sources as they are now: a stale one would measure other code.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
const outDir = mkdtempSync(join(tmpdir(), 'bench-instructions-'));
const stops: Array<() => Promise<unknown>> = [];
const store = await demoStore('postgres');
try {
  const key = store.demo.apiKeys.admin!;
  const headers = { 'x-api-key': key };
  const counted = (name: string, url: string, server: { pid: number; stop(): Promise<unknown> }) => {
    stops.push(() => server.stop());
    return { url, pid: server.pid, prefix: join(outDir, `${name}.${server.pid}`), dumps: 0 };
  };
  const starting = [
    startReference(store.envFor('reference'), key, { launcher: underCallgrind(outDir, 'reference'), startupMs: STARTUP_MS }).then((server) =>
      counted('reference', server.url, server),
    ),
    store.startProject('project', { launcher: underCallgrind(outDir, 'project'), startupMs: STARTUP_MS }).then((server) =>
      counted('project', server.summary.url, { pid: server.child.pid!, stop: () => server.stop() }),
    ),
  ] as const;
  // Both settled first, so that one started is stopped in the end even if the other failed to start.
  await Promise.allSettled(starting);
  const [reference, project] = await Promise.all(starting);
  const id = await danaOf(project.url, key);
  const rest = (url: string): LoadTarget => ({ url: `${url}/v4/employees/${id}`, headers });
  const call = await openMcpSession(`${project.url}/mcp`, headers, { name: 'get_employee', arguments: { id } });
  const mcp = (url: string): LoadTarget => ({ url: `${url}/mcp`, headers: call.callHeaders, post: { body: call.body } });
  for (const url of [project.url, reference.url]) await expectMcpEmployee(`${url}/mcp`, call, id);
  const v2: LoadTarget = { url: `${project.url}/v2/employees/${id}`, headers: { 'x-api-key': store.demo.legacyKeys.full! } };

  // Each server counts its requests in turn; the two servers run side by side.
  const [referenceCounts, projectCounts] = await Promise.all([
    (async () => ({ rest: await countPerRequest(reference, rest(reference.url)), mcp: await countPerRequest(reference, mcp(reference.url)) }))(),
    (async () => ({
      rest: await countPerRequest(project, rest(project.url)),
      mcp: await countPerRequest(project, mcp(project.url)),
      v2: await countPerRequest(project, v2),
    }))(),
  ]);

  const thousands = (n: number) => `${(n / 1000).toFixed(1)}k`;
  const row = (label: string, { median, least, most }: Windows) => [
    label,
    `${thousands(median.instructions)} (${thousands(least)}–${thousands(most)})`,
    Math.round(median.l1Misses),
    '',
    '',
  ];
  // Work over work: 1.00 is equal work, above it the first does more.
  const ratio = (label: string, { median: a }: Windows, { median: b }: Windows) => [
    label,
    '',
    '',
    (a.instructions / b.instructions).toFixed(2),
    (a.l1Misses / b.l1Misses).toFixed(2),
  ];
  const rows = [
    row('reference: GET /v4/employees/{id} (Fastify + the same SQL, prepared)', referenceCounts.rest),
    row('project: GET /v4/employees/{id}, silent', projectCounts.rest),
    ratio('ratio project ÷ reference', projectCounts.rest, referenceCounts.rest),
    row('reference: MCP tools/call get_employee, a plain POST route', referenceCounts.mcp),
    ratio('ratio reference MCP ÷ reference REST', referenceCounts.mcp, referenceCounts.rest),
    row('project: MCP tools/call get_employee (2025-11-25 session)', projectCounts.mcp),
    ratio('ratio project MCP ÷ reference MCP', projectCounts.mcp, referenceCounts.mcp),
    ratio('ratio project MCP ÷ project REST', projectCounts.mcp, projectCounts.rest),
    row('project: GET /v2/employees/{id} through the gateway, legacy key', projectCounts.v2),
    ratio('ratio v2 ÷ v4 direct', projectCounts.v2, projectCounts.rest),
  ];
  console.log(
    await writeResults('instructions', 'npm run bench -- instructions', ['request (PostgreSQL)', 'instructions / request (range of windows)', 'L1 misses / request (simulated)', 'ratio: instructions', 'ratio: L1 misses'], rows, [
      `Each server under valgrind's callgrind (--cache-sim=yes): the reference (bench/workers/reference-server.ts), and the build of \`svc-server serve\`, silent, on one demo schema. autocannon, one connection: ${WARMUP_REQUESTS} requests of warm-up, then the counters reset and ${COUNTED_WINDOWS} windows of ${COUNTED_REQUESTS} requests counted; the figures are the server's main thread over a window's requests (V8's compiler and GC helper threads left out): the window of median instructions, then the range of all windows in brackets. Ratios are of the median windows.`,
      'A ratio: the first row’s count over the second’s (1.00 is equal work; above it the first does more). A throughput ratio of 0.8 is a work ratio of 1.25, were instructions, or first-level misses, all that limited both.',
      'Windows of one row differ by up to a fifth, mostly one window far above the rest: a rare event (an old-generation collection, code V8 still compiles after the warm-up) charged to that window’s requests, which the median window leaves out. A timed ratio here swings by a third. Counts leave out what the machine adds: how long a miss takes, the kernel’s share of each request, V8’s helper threads, the other processes sharing the cores.',
    ]),
  );
} finally {
  for (const stop of stops) await stop();
  await store.drop();
  rmSync(outDir, { recursive: true, force: true });
}
