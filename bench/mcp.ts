import { measure, openMcpSession, startBenchServer, benchEachBackend, type Backend } from './lib.js';

/*
 * The cost of the MCP layer: tools/call get_employee in an open session (JSON-RPC over
 * Streamable HTTP, a fresh SDK server and transport per request, the session checked in the
 * store, the key re-authenticated) against REST GET /v4/employees/{id}, same server, same run.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  try {
    const { demo } = server;
    const id = demo.employees.dana;
    const key = { 'x-api-key': demo.apiKeys.admin };
    const mcpUrl = `${server.baseUrl}/mcp`;
    const { callHeaders, body } = await openMcpSession(mcpUrl, key, { name: 'get_employee', arguments: { id } });

    // The call must answer the employee, not an error result, before its speed means anything.
    const probe = (await (await fetch(mcpUrl, { method: 'POST', headers: callHeaders, body })).json()) as {
      result?: { isError?: boolean; structuredContent?: { id?: string } };
    };
    if (probe.result?.isError || probe.result?.structuredContent?.id !== id) throw new Error(`get_employee answered ${JSON.stringify(probe)}`);

    const rest = await measure(`${server.baseUrl}/v4/employees/${id}`, key, SECONDS);
    const mcp = await measure(mcpUrl, callHeaders, SECONDS, 10, { body });
    return [
      [backend, 'REST GET /v4/employees/{id}', rest.requestsPerSecond, rest.p50, rest.p99, rest.errors],
      [backend, 'MCP tools/call get_employee (session open)', mcp.requestsPerSecond, mcp.p50, mcp.p99, mcp.errors],
      [backend, 'ratio MCP ÷ REST', (mcp.requestsPerSecond / rest.requestsPerSecond).toFixed(2), '', '', ''],
    ];
  } finally {
    await server.close();
  }
}

await benchEachBackend('mcp', ['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'], run, [
    `autocannon in a separate process, 10 connections, ${SECONDS} s per row, on loopback, one server per store; the MCP row reuses one session (every request still re-authenticates the key and checks the session).`,
    'Target (issue 5): tools/call get_employee at ≥ 0.6× the REST throughput, in the same run.',
  ]);
