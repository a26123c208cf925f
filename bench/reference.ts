import Fastify from 'fastify';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { visibleEmployeeQuery } from '../src/domain/employees.js';
import { benchEachBackend, measureRounds, pairedRatio, schemaUrl, ROUNDS_NOTE, PAIRED_RATIO_NOTE, startBenchServer, type Backend } from './lib.js';

/*
 * The limit a read can reach here: plain Fastify running the project's own single-employee SQL
 * (visibleEmployeeQuery, with the admin's scope) as a named prepared statement, the API key checked
 * in a Map, against the project's GET /v4/employees/{id}, same data, same run. The ratio says how far
 * the project's hot path is from that limit; the other benchmarks' ratios are to the project's REST.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  // The same project at the default log level, as deployed (its lines to /dev/null).
  const logging = await startBenchServer(backend, { logLevel: 'info' });
  const pool = server.schema ? new pg.Pool({ connectionString: schemaUrl(server.schema), max: 10 }) : undefined;
  const reference = Fastify();
  try {
    const { demo } = server;
    const key = demo.apiKeys.admin;
    const principal = await server.core.auth.authenticate({ 'x-api-key': key });
    const principals = new Map([[key, principal]]);
    const { text } = visibleEmployeeQuery(principal, 'x').toQuery();
    const query = async (id: string): Promise<unknown[]> => {
      const { values } = visibleEmployeeQuery(principal, id).toQuery();
      // PGlite has no named statements: its reference is the same SQL on the same in-process engine.
      return pool ? (await pool.query({ name: 'employee_by_id', text, values })).rows : server.core.db.query(visibleEmployeeQuery(principal, id));
    };
    reference.get<{ Params: { id: string } }>('/v4/employees/:id', async (request, reply) => {
      const caller = principals.get(String(request.headers['x-api-key']));
      if (!caller) return reply.code(401).send({ ok: false });
      const [row] = await query(request.params.id);
      if (!row) return reply.code(404).send({ ok: false });
      return { ok: true, data: row, meta: { requestId: randomUUID() } };
    });
    const referenceUrl = await reference.listen({ host: '127.0.0.1', port: 0 });
    const path = `/v4/employees/${demo.employees.dana}`;
    const headers = { 'x-api-key': key };
    for (const base of [server.baseUrl, referenceUrl]) {
      const probe = await fetch(`${base}${path}`, { headers });
      if (!probe.ok) throw new Error(`${base}${path} answered ${probe.status}`);
    }
    const { plain, project, logged } = await measureRounds(
      {
        plain: { url: `${referenceUrl}${path}`, headers },
        project: { url: `${server.baseUrl}${path}`, headers },
        logged: { url: `${logging.baseUrl}/v4/employees/${logging.demo.employees.dana}`, headers: { 'x-api-key': logging.demo.apiKeys.admin } },
      },
      SECONDS,
    );
    return [
      [backend, 'reference: Fastify + the same SQL, prepared', plain.requestsPerSecond, plain.p50, plain.p99, plain.errors],
      [backend, 'project: GET /v4/employees/{id}', project.requestsPerSecond, project.p50, project.p99, project.errors],
      [backend, 'ratio project ÷ reference', pairedRatio(project, plain), '', '', ''],
      [backend, 'project at LOG_LEVEL=info (lines to /dev/null)', logged.requestsPerSecond, logged.p50, logged.p99, logged.errors],
      [backend, 'ratio project at info ÷ reference', pairedRatio(logged, plain), '', '', ''],
    ];
  } finally {
    await reference.close();
    await pool?.end();
    await server.close();
    await logging.close();
  }
}

await benchEachBackend('reference', ['store', 'server', 'req/s', 'p50 ms', 'p99 ms', 'errors'], run, [
  `autocannon in a separate process, 10 connections, ${SECONDS} s per run, on loopback; the project silent, then at the default log level with its lines written to /dev/null.`,
  ROUNDS_NOTE,
  PAIRED_RATIO_NOTE,
  'Target (issue 10): the project ≥ 0.8× the reference on PostgreSQL and on PGlite.',
]);
