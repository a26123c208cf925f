import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { apartFromServers, createBenchSchema, describeBuild, editedBuildNotes, type BuildDescription, SECRET_KEY, writeResults } from './lib.js';
import { untilHealthy } from '../test/helpers/healthz.js';
import { freePort } from '../test/helpers/ports.js';
import { ServerProcess } from '../test/helpers/server-process.js';

/*
 * Start to ready: from spawning `svc-server serve` (the build, as an operator runs it) to its first
 * `/readyz` 200, and on to the OAuth provider's first answer (it loads after the port opens). Idle, and
 * with another instance on the same machine answering reads flat out (a rolling restart's step).
 * PostgreSQL with Redis, and the embedded store restarted on its data directory. With
 * BENCH_START_BASELINE=<checkout with its dist/ built>, that build is started too, the two in turn.
 * BENCH_START_NODES=<node binaries, comma-separated> adds runtimes beside this process's node.
 */

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const here = fileURLToPath(new URL('..', import.meta.url));
const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

interface Build extends BuildDescription {
  role: 'this checkout' | 'baseline';
}
const builds: Build[] = [{ role: 'this checkout', ...describeBuild(here) }];
const baseline = process.env.BENCH_START_BASELINE;
if (baseline) builds.push({ role: 'baseline', ...describeBuild(baseline) });
for (const build of builds) {
  if (!existsSync(join(build.root, 'dist/src/main.js'))) throw new Error(`${build.root}/dist/src/main.js is missing: run npm run build there`);
}
const nodes = [process.execPath, ...(process.env.BENCH_START_NODES ?? '').split(',').filter(Boolean)];
const versionOf = (node: string) => (node === process.execPath ? process.version : (node.match(/node-(\d[\d.]*)/)?.[1] ?? node));

interface Sample {
  readyMs: number;
  oauthMs: number;
}

/** Waits for `probe` to answer 200 (polled every 5 ms); fails if the process exits first. */
async function firstAnswer(url: string, child: ChildProcess, probe: string): Promise<void> {
  if (!(await untilHealthy(url, child, { timeoutMs: 120_000, intervalMs: 5, probe }))) throw new Error(`svc-server never answered ${probe} with 200 (exit code ${child.exitCode})`);
}

/** One start of `build` under `node` with `env`; stopped (SIGINT: no drain) once measured. */
async function startOnce(node: string, build: Build, env: NodeJS.ProcessEnv): Promise<Sample> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(node, [join(build.root, 'dist/src/main.js'), 'serve', '--port', String(port)], {
    cwd: build.root,
    env: { ...process.env, LOG_LEVEL: 'silent', SVC_SECRET_KEY: SECRET_KEY, ...env },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  try {
    await firstAnswer(url, child, '/readyz');
    const readyMs = performance.now() - started;
    await firstAnswer(url, child, '/api/oauth/jwks');
    return { readyMs, oauthMs: performance.now() - started };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGINT');
    await exited;
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface Store {
  label: string;
  /** The environment of a measured start, and whatever it needs ready beforehand. */
  envFor(build: Build): NodeJS.ProcessEnv;
}

const schema = await createBenchSchema();
const postgres: Store = { label: 'PostgreSQL + Redis', envFor: () => ({ DATABASE_URL: schema.url, REDIS_URL }) };
// The embedded store as `npm start` restarts it: a data directory made by a first start, one copy per build.
const dataDirs = new Map<string, string>();
const embedded: Store = { label: 'embedded (PGlite), restart', envFor: (build) => ({ DATA_DIR: dataDirs.get(build.root)! }) };

let load: ChildProcess | undefined;
const stopLoad = async () => {
  const exited = new Promise((resolve) => load!.once('exit', resolve));
  load!.kill('SIGKILL');
  await exited;
  load = undefined;
};

const work = mkdtempSync(join(tmpdir(), 'bench-start-'));
const rows: Array<Array<string | number>> = [];
let neighbour: ServerProcess | undefined;
try {
  // A loaded neighbour: this checkout on the same schema, its demo data read by autocannon in a process of its own.
  neighbour = await ServerProcess.start(['--demo'], { DATABASE_URL: schema.url, REDIS_URL, SVC_SECRET_KEY: SECRET_KEY });
  const { url, demo } = neighbour.summary;
  const key = demo!.apiKeys.admin!;
  const employees = (await (await fetch(`${url}/v4/employees?limit=1`, { headers: { 'x-api-key': key } })).json()) as {
    data: { employees: Array<{ id: string }> };
  };
  const readUrl = `${url}/v4/employees/${employees.data.employees[0]!.id}`;
  const startLoad = () => {
    load = spawn(...apartFromServers(process.execPath, [AUTOCANNON, '-c', '10', '-d', '3600', '-H', `x-api-key=${key}`, readUrl]), { stdio: 'ignore' });
  };
  for (const build of builds) {
    const dir = join(work, String(dataDirs.size));
    await startOnce(process.execPath, build, { DATA_DIR: dir }); // migrates a new store
    dataDirs.set(build.root, dir);
  }
  for (const node of nodes) {
    for (const store of [postgres, embedded]) {
      for (const condition of ['idle', 'under load'] as const) {
        if (condition === 'under load') startLoad();
        // Each configuration once unmeasured (the file cache, Node's compile cache where it has one), then in turn.
        for (const build of builds) await startOnce(node, build, store.envFor(build));
        const samples = builds.map(() => [] as Sample[]);
        for (let run = 0; run < RUNS; run++) {
          const order = run % 2 ? [...builds].reverse() : builds;
          for (const build of order) samples[builds.indexOf(build)]!.push(await startOnce(node, build, store.envFor(build)));
        }
        if (condition === 'under load') await stopLoad();
        builds.forEach((build, i) => {
          const ready = median(samples[i]!.map((s) => s.readyMs));
          const ratio = i === 0 || builds.length === 1 ? '' : (ready / median(samples[0]!.map((s) => s.readyMs))).toFixed(2);
          rows.push([
            `Node ${versionOf(node)}`,
            store.label,
            condition,
            `${build.role}, ${build.label}`,
            ready.toFixed(0),
            Math.min(...samples[i]!.map((s) => s.readyMs)).toFixed(0),
            median(samples[i]!.map((s) => s.oauthMs)).toFixed(0),
            ratio,
          ]);
        });
      }
    }
  }
} finally {
  if (load) await stopLoad();
  await neighbour?.stop();
  await schema.drop();
  rmSync(work, { recursive: true, force: true });
}

const text = await writeResults(
  'server-start',
  'npm run bench -- server-start',
  ['node', 'store', 'machine', 'build', 'ready, median ms', 'ready, min ms', 'OAuth answering, median ms', '× this checkout'],
  rows,
  [
    `Median of ${RUNS} starts each, builds in turn (every other run in reverse order), after one unmeasured start of each. From spawning`,
    '`node dist/src/main.js serve` to the first `/readyz` 200 (polled every 5 ms), and to the first 200 of `/api/oauth/jwks`.',
    'Under load: another instance (this checkout, on PostgreSQL with Redis, on the schema of the PostgreSQL rows) answers `GET /v4/employees/{id}` to 10 autocannon connections meanwhile, whichever store the measured start uses.',
    'The embedded store restarts on a data directory a first start migrated, as a second `npm start` does.',
    ...editedBuildNotes(builds),
  ],
);
process.stdout.write(text);
