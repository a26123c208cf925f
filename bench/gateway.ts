import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { sql } from '../src/store/sql.js';
import { createLegacyKey } from '../src/gateway/legacy-keys.js';
import { measure, startBenchServer, benchEachBackend, type Backend } from './lib.js';

/*
 * The cost of translation: a v2 single-record GET through the gateway, against the same record
 * through a plain @fastify/http-proxy passthrough to the core and against direct v4; and a v2
 * full-list GET at 5,000 employees against a client walking the v4 pages itself.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const EMPLOYEES = 5_000;
const WALKS = 10;

async function timeIt(times: number, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < times; i++) await work();
  return Math.round((performance.now() - started) / times);
}

async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  const passthrough = Fastify();
  try {
    const { core, demo } = server;
    await core.db.query(sql`
      INSERT INTO employees (id, company_id, display_name, email, country, team_id, address_one, city, zip_code)
      SELECT 'emp_bench' || lpad(g::text, 8, '0'), ${demo.companies.acme}, 'Bench Employee ' || g,
        'bench' || g || '@acme.example', 'DE', ${demo.teams.engineering}, 'Street ' || g, 'Berlin', '10115'
      FROM generate_series(1, ${EMPLOYEES}::int) AS g`);
    const legacy = await createLegacyKey(core, core.mappings, {
      companyId: demo.companies.acme,
      name: 'bench',
      scopes: ['api.employee.get', 'api.employees.getAll'],
    });
    const v4Key = demo.apiKeys.admin;
    await passthrough.register(proxy, { upstream: server.baseUrl, prefix: '/v4', rewritePrefix: '/v4' });
    await passthrough.listen({ host: '127.0.0.1', port: 0 });
    const proxyUrl = `http://127.0.0.1:${(passthrough.server.address() as { port: number }).port}`;
    const id = demo.employees.dana;

    const v2 = await measure(`${server.baseUrl}/v2/employees/${id}`, { 'x-api-key': legacy.rawKey! }, SECONDS);
    const plain = await measure(`${proxyUrl}/v4/employees/${id}`, { 'x-api-key': v4Key }, SECONDS);
    const direct = await measure(`${server.baseUrl}/v4/employees/${id}`, { 'x-api-key': v4Key }, SECONDS);

    const v2List = await timeIt(WALKS, async () => {
      const response = await fetch(`${server.baseUrl}/v2/employees`, { headers: { 'x-api-key': legacy.rawKey! } });
      const body = (await response.json()) as unknown[];
      if (body.length < EMPLOYEES) throw new Error(`v2 list returned ${body.length}`);
    });
    const v4Walk = await timeIt(WALKS, async () => {
      let cursor: string | null = null;
      let count = 0;
      do {
        const url = `${server.baseUrl}/v4/employees?limit=50${cursor ? `&cursor=${cursor}` : ''}`;
        const body = (await (await fetch(url, { headers: { 'x-api-key': v4Key } })).json()) as {
          data: { employees: unknown[]; nextCursor: string | null };
        };
        count += body.data.employees.length;
        cursor = body.data.nextCursor;
      } while (cursor);
      if (count < EMPLOYEES) throw new Error(`v4 walk returned ${count}`);
    });
    return [
      [backend, 'GET one employee: v2 through the gateway', v2.requestsPerSecond, v2.p50, v2.p99, v2.errors],
      [backend, 'GET one employee: v4 through @fastify/http-proxy', plain.requestsPerSecond, plain.p50, plain.p99, plain.errors],
      [backend, 'GET one employee: v4 direct', direct.requestsPerSecond, direct.p50, direct.p99, direct.errors],
      [backend, 'ratio v2 ÷ plain passthrough', (v2.requestsPerSecond / plain.requestsPerSecond).toFixed(2), '', '', ''],
      [backend, `full list of ${EMPLOYEES + 6}: v2 bare array (ms per list, mean of ${WALKS})`, '', v2List, '', 0],
      [backend, `full list of ${EMPLOYEES + 6}: client walks v4 pages (ms per list, mean of ${WALKS})`, '', v4Walk, '', 0],
    ];
  } finally {
    await passthrough.close();
    await server.close();
  }
}

await benchEachBackend('gateway', ['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'], run, [
    `autocannon in a separate process, 10 connections, ${SECONDS} s per row, on loopback. The gateway and the core share one process (the default deployment); the plain passthrough is a second Fastify app in the benchmark process.`,
    'Target (issue 3): a translated v2 call at ≥ 0.9× the throughput of the plain passthrough, in the same run.',
  ]);
