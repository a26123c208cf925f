import { execFileSync } from 'node:child_process';
import { danaOf } from '../test/faults/support.js';
import type { ServerProcess } from '../test/helpers/server-process.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';
import {
  benchEachBackend,
  capacityRatio,
  expectMcpEmployee,
  measureRounds,
  openMcpSession,
  pairedRatio,
  ROUNDS_NOTE,
  PAIRED_RATIO_NOTE,
  type Backend,
  type LoadTarget,
  demoStore,
  startReference,
} from './lib.js';

/*
 * The limit a read can reach here: plain Fastify running the project's own single-employee SQL as a
 * named prepared statement, the API key checked in a Map (bench/workers/reference-server.ts), against
 * the project's GET /v4/employees/{id}, same data, same run; and the same for an MCP tools/call. Every server is a process of its own, as
 * deployed: the project is the build of `svc-server serve`, silent and at the default log level (its
 * lines to /dev/null). The ratio says how far the project's hot path is from that limit; the other
 * benchmarks' ratios are to the project's REST.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

async function run(backend: Backend) {
  const store = await demoStore(backend);
  const servers: Array<{ stop(): Promise<unknown> }> = [];
  try {
    const start = async (copy: string, logLevel?: string): Promise<ServerProcess> => {
      const server = await store.startProject(copy, logLevel ? { logToDevNullAt: logLevel } : {});
      servers.push(server);
      return server;
    };
    const key = store.demo.apiKeys.admin!;
    const project = await start('project');
    const logging = await start('logging', 'info');
    const reference = await startReference(store.envFor('reference'), key);
    servers.push(reference);
    const headers = { 'x-api-key': key };
    const id = await danaOf(project.summary.url, key);
    const path = `/v4/employees/${id}`;
    for (const base of [project.summary.url, logging.summary.url, reference.url]) {
      const probe = await fetch(`${base}${path}`, { headers });
      if (!probe.ok) throw new Error(`${base}${path} answered ${probe.status}`);
    }
    const mcpCall = await openMcpSession(`${project.summary.url}/mcp`, headers, { name: 'get_employee', arguments: { id } });
    const mcp = (base: string, pid: number): LoadTarget => ({ url: `${base}/mcp`, headers: mcpCall.callHeaders, post: { body: mcpCall.body }, serverPid: pid });
    for (const base of [project.summary.url, reference.url]) await expectMcpEmployee(`${base}/mcp`, mcpCall, id);
    const { plain, silent, logged, plainMcp, projectMcp } = await measureRounds(
      {
        plain: { url: `${reference.url}${path}`, headers, serverPid: reference.pid },
        silent: { url: `${project.summary.url}${path}`, headers, serverPid: project.child.pid! },
        logged: { url: `${logging.summary.url}${path}`, headers, serverPid: logging.child.pid! },
        plainMcp: mcp(reference.url, reference.pid),
        projectMcp: mcp(project.summary.url, project.child.pid!),
      },
      SECONDS,
      MCP_IN_FLIGHT_PER_CREDENTIAL,
    );
    const row = (label: string, m: typeof plain) => [backend, label, m.requestsPerSecond, m.p50, m.p99, m.errors, m.cpuMicrosPerRequest];
    const ratio = (label: string, a: typeof plain, b: typeof plain) => [backend, label, pairedRatio(a, b), '', '', '', capacityRatio(a, b)];
    return [
      row('reference: Fastify + the same SQL, prepared', plain),
      row('project: GET /v4/employees/{id}', silent),
      ratio('ratio project ÷ reference (capacity in the last column)', silent, plain),
      row('project at LOG_LEVEL=info (lines to /dev/null)', logged),
      ratio('ratio project at info ÷ reference (capacity in the last column)', logged, plain),
      row('reference: MCP tools/call get_employee, a plain POST route', plainMcp),
      ratio('ratio reference MCP ÷ reference REST: what the protocol costs', plainMcp, plain),
      row('project: MCP tools/call get_employee (2025-11-25 session)', projectMcp),
      ratio('ratio project MCP ÷ reference MCP', projectMcp, plainMcp),
      ratio('ratio project MCP ÷ project REST', projectMcp, silent),
    ];
  } finally {
    for (const server of servers) await server.stop();
    await store.drop();
  }
}

// The build of the sources as they are now: a stale one would measure other code.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
await benchEachBackend('reference', ['store', 'server', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'server CPU µs/req'], run, [
  `Three server processes on the same demo data: the reference (bench/workers/reference-server.ts), the build of \`svc-server serve\` silent, and the same at the default log level with its lines written to /dev/null; on PostgreSQL one schema, on PGlite a copy of one data directory each. autocannon in a separate process, ${MCP_IN_FLIGHT_PER_CREDENTIAL} connections (one key: the most MCP requests it may have in flight, MCP_IN_FLIGHT_PER_CREDENTIAL; REST rows alike, so rows compare), ${SECONDS} s per run, on loopback.`,
  ROUNDS_NOTE,
  PAIRED_RATIO_NOTE,
  'Server CPU µs/req: the server process’s CPU time (user and system, from /proc) over the requests answered, in the median run; on PGlite it includes the database. A capacity ratio: the reference’s CPU per request over the project’s, paired by round: the throughput ratio were the server’s CPU all that limited both.',
  'The MCP rows: tools/call get_employee in an open 2025-11-25 session on the silent project, and the same POST to the reference, which parses the JSON-RPC body, runs the same statement and answers the result as the spec shapes it (structuredContent, and the same JSON in a text block): the least the protocol costs over REST, with no session, SDK or schema checks.',
  'Targets (issue 10): the project ≥ 0.8× the reference on PostgreSQL and on PGlite; MCP tools/call ≥ 0.8× REST.',
]);
