import { capacityRatio, expectMcpEmployee, measureRounds, modernToolCall, pairedRatio, openMcpSession, startBenchServer, benchEachBackend, ROUNDS_NOTE, PAIRED_RATIO_NOTE, CAPACITY_RATIO_NOTE, type Backend, type LoadTarget } from './lib.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';

/*
 * The cost of the MCP layer, per protocol revision: tools/call get_employee in an open 2025-11-25
 * session (SDK v1: the session checked in the store) and as a sessionless 2026-07-28 request
 * (SDK v2: the envelope and headers validated), each with a fresh SDK server per request and the
 * key re-authenticated, against REST GET /v4/employees/{id}, same server, same run.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  try {
    const { demo } = server;
    const id = demo.employees.dana;
    const key = { 'x-api-key': demo.apiKeys.admin };
    const mcpUrl = `${server.baseUrl}/mcp`;
    const call = { name: 'get_employee', arguments: { id } };
    const eras = [
      ['2025-11-25 (session open)', await openMcpSession(mcpUrl, key, call)],
      ['2026-07-28 (no session)', modernToolCall(key, call)],
    ] as const;

    // Each call must answer the employee, not an error result, before its speed means anything.
    for (const [, call] of eras) await expectMcpEmployee(mcpUrl, call, id);

    const targets: Record<string, LoadTarget> = { rest: { url: `${server.baseUrl}/v4/employees/${id}`, headers: key } };
    for (const [era, { callHeaders, body }] of eras) targets[era] = { url: mcpUrl, headers: callHeaders, post: { body } };
    const measured = await measureRounds(targets, SECONDS, MCP_IN_FLIGHT_PER_CREDENTIAL);
    const rest = measured.rest!;
    const row = (label: string, m: typeof rest) => [backend, label, m.requestsPerSecond, m.p50, m.p99, m.errors, m.cpuMicrosPerRequest];
    const rows: (string | number)[][] = [row('REST GET /v4/employees/{id}', rest)];
    for (const [era] of eras) {
      const mcp = measured[era]!;
      rows.push(
        row(`MCP ${era} tools/call get_employee`, mcp),
        [backend, `ratio MCP ${era.split(' ')[0]} ÷ REST (capacity in the last column)`, pairedRatio(mcp, rest), '', '', '', capacityRatio(mcp, rest)],
      );
    }
    return rows;
  } finally {
    await server.close();
  }
}

await benchEachBackend('mcp', ['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'CPU µs/req'], run, [
    `autocannon in a separate process, ${MCP_IN_FLIGHT_PER_CREDENTIAL} connections (one key: the most MCP requests it may have in flight; REST alike), ${SECONDS} s per run, on loopback, one server per store; the 2025-11-25 rows reuse one session (every request still re-authenticates the key and checks the session), the 2026-07-28 rows carry everything in each request.`,
    ROUNDS_NOTE,
    PAIRED_RATIO_NOTE,
    CAPACITY_RATIO_NOTE,
    'Targets: tools/call get_employee at ≥ 0.6× the REST throughput under each protocol revision (issues 5 and 13) and ≥ 0.8× (issue 10), in the same run.',
  ]);
