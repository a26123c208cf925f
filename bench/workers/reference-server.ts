// First: the reference runs on svc-server's V8 settings, so the two differ by their code alone.
import '../../src/kit/runtime-flags.js';
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { createAuthenticator } from '../../src/access/authenticate.js';
import { visibleEmployeeQuery } from '../../src/domain/employees.js';
import { openDb } from '../../src/store/db.js';

/*
 * The reference of bench/reference.ts, as a process of its own beside the project's: plain Fastify
 * running the project's single-employee SQL (visibleEmployeeQuery, with the caller's scope) as one
 * named prepared statement on a pg pool, the API key checked in a Map. On PGlite, which has no named
 * statements, the same SQL on the same in-process engine, on a copy of the project's data directory.
 *
 * Environment: REFERENCE_KEY (a demo admin key, resolved once at start with the project's own
 * authenticator), DATABASE_URL (PostgreSQL, search path included) or DATA_DIR (PGlite), PORT.
 * Prints its base URL once listening; SIGTERM closes it.
 */

const key = process.env.REFERENCE_KEY ?? '';
const databaseUrl = process.env.DATABASE_URL;
const db = await openDb({ databaseUrl, dataDir: process.env.DATA_DIR ?? '' });
const principal = await createAuthenticator(db).authenticate({ 'x-api-key': key });
const principals = new Map([[key, principal]]);
const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : undefined;
const { text } = visibleEmployeeQuery(principal, 'x').toQuery();

const employeeById = async (id: string): Promise<unknown[]> => {
  const statement = visibleEmployeeQuery(principal, id);
  return pool ? (await pool.query({ name: 'employee_by_id', text, values: statement.toQuery().values })).rows : db.query(statement);
};

const app = Fastify();
app.get<{ Params: { id: string } }>('/v4/employees/:id', async (request, reply) => {
  const caller = principals.get(String(request.headers['x-api-key']));
  if (!caller) return reply.code(401).send({ ok: false });
  const [row] = await employeeById(request.params.id);
  if (!row) return reply.code(404).send({ ok: false });
  return { ok: true, data: row, meta: { requestId: randomUUID() } };
});

// The least an MCP tools/call get_employee can cost: the JSON-RPC body parsed, the same statement,
// and the result as the spec shapes it (structuredContent and the same JSON as a text block).
app.post<{ Body: { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: { id?: unknown } } } }>('/mcp', async (request, reply) => {
  const caller = principals.get(String(request.headers['x-api-key']));
  if (!caller) return reply.code(401).send({ ok: false });
  const { id, method, params } = request.body;
  if (method !== 'tools/call' || params?.name !== 'get_employee' || typeof params.arguments?.id !== 'string') return reply.code(400).send({ ok: false });
  const [row] = await employeeById(params.arguments.id);
  const text = JSON.stringify(row ?? null);
  return reply.type('application/json').send(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}}`);
});

const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.stdout.write(`${url}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => pool?.end())
    .then(() => db.close())
    .then(() => process.exit(0));
});
