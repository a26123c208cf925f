import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchSchema, measureRounds, openMcpSession, pairedRatio, PAIRED_RATIO_NOTE, ROUNDS_NOTE, SECRET_KEY, writeResults, type LoadTarget } from './lib.js';
import { freePort } from '../test/helpers/ports.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';

/*
 * This checkout against another build of the service in one run: BENCH_BASELINE=<a checkout with its
 * dist/ built> npm run bench -- builds. Each build runs `svc-server serve` as an operator does, on a
 * PostgreSQL schema of its own with the demo data and Redis; the same reads of each surface are
 * measured on both in turn, round after round, and compared round by round.
 */

const baseline = process.env.BENCH_BASELINE;
if (!baseline) throw new Error('BENCH_BASELINE=<path of a checkout whose dist/ is built> names the build to compare with');
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

const schemas = [await createBenchSchema(), await createBenchSchema()];
const builds: Running[] = [];
try {
  // One at a time, so that the first is stopped below if the second fails to start.
  builds.push(await serve(here, schemas[0]!.url));
  builds.push(await serve(baseline, schemas[1]!.url));
  const [mine, theirs] = await Promise.all(builds.map(targetsOf));
  const results = await measureRounds(
    {
      'REST GET /v4/employees/{id} — this': mine!.rest,
      'REST GET /v4/employees/{id} — baseline': theirs!.rest,
      'v2 GET /v2/employees/{id} — this': mine!.v2,
      'v2 GET /v2/employees/{id} — baseline': theirs!.v2,
      'MCP tools/call get_employee (2025-11-25) — this': mine!.mcp,
      'MCP tools/call get_employee (2025-11-25) — baseline': theirs!.mcp,
    },
    SECONDS,
    MCP_IN_FLIGHT_PER_CREDENTIAL,
  );
  const rows = (['REST GET /v4/employees/{id}', 'v2 GET /v2/employees/{id}', 'MCP tools/call get_employee (2025-11-25)'] as const).map((surface) => {
    const a = results[`${surface} — this`];
    const b = results[`${surface} — baseline`];
    return [surface, a.requestsPerSecond, b.requestsPerSecond, pairedRatio(a, b), `${a.p50} / ${b.p50}`, a.cpuMicrosPerRequest, b.cpuMicrosPerRequest, a.errors + b.errors];
  });
  const text = await writeResults(
    'builds',
    `BENCH_BASELINE=${baseline} npm run bench -- builds`,
    ['read', 'this checkout req/s', 'baseline req/s', 'this ÷ baseline', 'p50 ms (this / baseline)', 'CPU µs/req (this)', 'CPU µs/req (baseline)', 'errors'],
    rows,
    [
      `Baseline: ${baseline}. Each build is \`node dist/src/main.js serve --demo\` on its own PostgreSQL schema with Redis, LOG_LEVEL silent.`,
      `Load: autocannon, ${MCP_IN_FLIGHT_PER_CREDENTIAL} connections (the most MCP requests one key may have in flight; the others alike), ${SECONDS} s a run. ${ROUNDS_NOTE} ${PAIRED_RATIO_NOTE}`,
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
