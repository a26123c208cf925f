import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capacityRatio, capacityRatioNote, createBenchSchema, describeBuild, editedBuildNotes, measureRounds, openMcpSession, pairedRatio, PAIRED_RATIO_NOTE, ROUNDS_NOTE, SECRET_KEY, writeResults, type LoadTarget } from './lib.js';
import { freePort } from '../test/helpers/ports.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';

/*
 * This checkout against other builds of the service in one run: BENCH_BASELINE=<checkouts with their
 * dist/ built, comma-separated> npm run bench -- builds. Each build runs `svc-server serve` as an
 * operator does, on a PostgreSQL schema of its own with the demo data and Redis; the same reads of each
 * surface are measured on every build in turn, round after round, and this one compared with each
 * other round by round. Several baselines in one run tell where a difference came from: the build a
 * change started from, and the builds either side of a commit suspected of it.
 */

const baselines = (process.env.BENCH_BASELINE ?? '').split(',').filter(Boolean);
if (baselines.length === 0) throw new Error('BENCH_BASELINE=<paths of checkouts whose dist/ is built, comma-separated> names the builds to compare with');
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const here = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

interface Running {
  child: ChildProcess;
  url: string;
  demo: { apiKeys: Record<string, string>; legacyKeys: Record<string, string> };
}

/** `serve --json --demo` of the build at `root`; resolves with its summary once it listens. */
async function serve(root: string, databaseUrl: string): Promise<Running> {
  if (!existsSync(join(root, 'dist/src/main.js'))) throw new Error(`${root}/dist/src/main.js is missing: run npm run build there`);
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'dist/src/main.js'), 'serve', '--json', '--demo', '--port', String(port)], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL, SVC_SECRET_KEY: SECRET_KEY, LOG_LEVEL: 'silent', SHUTDOWN_DRAIN_MS: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const summary = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      // The summary comes first, on one line or (older builds) pretty-printed; log lines follow it.
      const end = text.startsWith('{\n') ? text.indexOf('\n}') + 2 : text.indexOf('\n');
      if (end > 0) resolve(text.slice(0, end));
    });
    child.once('exit', (code) => reject(new Error(`${root}: serve exited with ${code} before listening`)));
  });
  const { url, demo } = JSON.parse(summary) as Running;
  return { child, url, demo };
}

/** The reads measured on a build: one per surface, the same employee. */
async function targetsOf(build: Running): Promise<Record<'rest' | 'v2' | 'mcp', LoadTarget>> {
  const key = { 'x-api-key': build.demo.apiKeys.admin! };
  const list = (await (await fetch(`${build.url}/v4/employees?limit=1`, { headers: key })).json()) as { data: { employees: Array<{ id: string }> } };
  const id = list.data.employees[0]!.id;
  const session = await openMcpSession(`${build.url}/mcp`, key, { name: 'get_employee', arguments: { id } });
  const serverPid = build.child.pid;
  return {
    rest: { url: `${build.url}/v4/employees/${id}`, headers: key, serverPid },
    v2: { url: `${build.url}/v2/employees/${id}`, headers: { 'x-api-key': build.demo.legacyKeys.full! }, serverPid },
    mcp: { url: `${build.url}/mcp`, headers: session.callHeaders, post: { body: session.body }, serverPid },
  };
}

const SURFACES = { rest: 'REST GET /v4/employees/{id}', v2: 'v2 GET /v2/employees/{id}', mcp: 'MCP tools/call get_employee (2025-11-25)' } as const;
const described = [here, ...baselines].map(describeBuild);
const schemas = await Promise.all(described.map(() => createBenchSchema()));
const rowKey = (surface: keyof typeof SURFACES, build: number) => `${SURFACES[surface]} — ${build}`;
const builds: Running[] = [];
try {
  // One at a time, so that those started are stopped below if another fails to start.
  for (const [i, { root }] of described.entries()) builds.push(await serve(root, schemas[i]!.url));
  const targets = await Promise.all(builds.map(targetsOf));
  // Surface by surface, so that the builds compared on one are measured back to back.
  const rowTargets: Record<string, LoadTarget> = {};
  for (const surface of Object.keys(SURFACES) as Array<keyof typeof SURFACES>) {
    for (const [i, build] of targets.entries()) rowTargets[rowKey(surface, i)] = build[surface];
  }
  const results = await measureRounds(rowTargets, SECONDS, MCP_IN_FLIGHT_PER_CREDENTIAL);
  const rows = (Object.keys(SURFACES) as Array<keyof typeof SURFACES>).flatMap((surface) =>
    baselines.map((_, b) => {
      const a = results[rowKey(surface, 0)]!;
      const other = results[rowKey(surface, b + 1)]!;
      return [SURFACES[surface], described[b + 1]!.label, a.requestsPerSecond, other.requestsPerSecond, pairedRatio(a, other), capacityRatio(a, other), `${a.p50} / ${other.p50}`, a.cpuMicrosPerRequest, other.cpuMicrosPerRequest, `${a.databaseCpuMicrosPerRequest} / ${other.databaseCpuMicrosPerRequest}`, a.errors + other.errors];
    }),
  );
  const text = await writeResults(
    'builds',
    'npm run bench -- builds',
    ['read', 'baseline', 'this req/s', 'baseline req/s', 'this ÷ baseline', 'capacity ratio', 'p50 ms (this / baseline)', 'CPU µs/req (this)', 'CPU µs/req (baseline)', 'PostgreSQL CPU µs/req (this / baseline)', 'errors'],
    rows,
    [
      `This checkout: ${described[0]!.label}. Each build is \`node dist/src/main.js serve --demo\` on its own PostgreSQL schema with Redis, LOG_LEVEL silent.`,
      `Load: autocannon, ${MCP_IN_FLIGHT_PER_CREDENTIAL} connections (the most MCP requests one key may have in flight; the others alike), ${SECONDS} s a run. ${ROUNDS_NOTE} ${PAIRED_RATIO_NOTE}`,
      capacityRatioNote('the baseline’s', 'this one’s', 'each server process’s'),
      'PostgreSQL CPU µs/req: that of every postgres process on this machine while the row ran (the other builds’ idle connections included), over the row’s requests answered. The req/s, p50 and CPU columns are each build’s own median run, often of different rounds, so their quotients need not equal the paired ratios.',
      ...editedBuildNotes(described),
    ],
  );
  process.stdout.write(text);
} finally {
  for (const { child } of builds) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  }
  for (const schema of schemas) await schema.drop();
}
