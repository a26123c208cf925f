import { measure, startBenchServer, benchEachBackend, type Backend } from './lib.js';

/*
 * The cost of the MCP layer: tools/call get_employee in an open session (JSON-RPC over
 * Streamable HTTP, a fresh SDK server and transport per request, the session checked in the
 * store, the key re-authenticated) against REST GET /v4/employees/{id}, same server, same run.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PROTOCOL_VERSION = '2025-11-25';

async function openSession(mcpUrl: string, headers: Record<string, string>): Promise<string> {
  const post = (body: unknown, extra: Record<string, string> = {}) =>
    fetch(mcpUrl, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.arrayBuffer();
  if (!sessionId) throw new Error(`initialize answered ${init.status} without a session`);
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sessionId })).arrayBuffer();
  return sessionId;
}

async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  try {
    const { demo } = server;
    const id = demo.employees.dana;
    const key = { 'x-api-key': demo.apiKeys.admin };
    const mcpUrl = `${server.baseUrl}/mcp`;
    const mcpHeaders = { ...key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const sessionId = await openSession(mcpUrl, mcpHeaders);
    const callHeaders = { ...mcpHeaders, 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_employee', arguments: { id } } });

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
