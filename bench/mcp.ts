import { capacityRatio, expectMcpEmployee, measureRounds, modernToolCall, pairedRatio, openMcpSession, startBenchServer, benchEachBackend, ROUNDS_NOTE, PAIRED_RATIO_NOTE, CAPACITY_RATIO_NOTE, type Backend, type LoadTarget } from './lib.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from '../src/mcp/limits.js';

/*
 * The cost of the MCP layer, per protocol revision: tools/call get_employee in an open 2025-11-25
 * session (SDK v1: the session checked in the store) and as a sessionless 2026-07-28 request
 * (the envelope and headers checked as SDK v2 would), both answered without an SDK server and the
 * key re-authenticated, against REST GET /v4/employees/{id}, same server, same run; and the same
 * 2026-07-28 call through the SDK v2 server, paired with the direct answer.
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
    const modern = modernToolCall(key, call);
    // The same call with its Mcp-Name in the header's Base64 form, which only the SDK serves: what the direct answer saves.
    const throughSdk = { ...modern, callHeaders: { ...modern.callHeaders, 'mcp-name': `=?base64?${Buffer.from(call.name).toString('base64')}?=` } };
    const eras = [
      ['2025-11-25 (session open)', await openMcpSession(mcpUrl, key, call)],
      ['2026-07-28 (no session)', modern],
      ['2026-07-28 (no session, through the SDK v2 server)', throughSdk],
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
        [backend, `ratio MCP ${era} ÷ REST (capacity in the last column)`, pairedRatio(mcp, rest), '', '', '', capacityRatio(mcp, rest)],
      );
    }
    const direct = measured['2026-07-28 (no session)']!;
    const sdk = measured['2026-07-28 (no session, through the SDK v2 server)']!;
    rows.push([backend, 'ratio MCP 2026-07-28 answered directly ÷ through the SDK v2 server (capacity in the last column)', pairedRatio(direct, sdk), '', '', '', capacityRatio(direct, sdk)]);
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
    'The SDK v2 row sends the 2026-07-28 call with its Mcp-Name in Base64, which only the SDK serves: the SDK validates it and its tools/call handler runs the same callTool, so the direct ÷ SDK ratio is what answering without an SDK server saves (src/mcp/tool-calls.ts, answerToolCall).',
    'Targets: tools/call get_employee at ≥ 0.6× the REST throughput under each protocol revision (issues 5 and 13) and ≥ 0.8× (issue 10), in the same run.',
  ]);
