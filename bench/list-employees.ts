import { sql } from '../src/store/sql.js';
import { encodeCursor, fingerprint } from '../src/store/paging.js';
import { measure, startBenchServer, writeResults, type Backend } from './lib.js';

/*
 * GET /v4/employees at 10,000 and 100,000 employees: page 1, a deep page by cursor (keyset)
 * and the same deep page by page number (offset), on PGlite and on PostgreSQL.
 */

const SIZES = [10_000, 100_000];
const PAGE = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

async function insertEmployees(server: Awaited<ReturnType<typeof startBenchServer>>, count: number) {
  await server.core.db.query(sql`
    INSERT INTO employees (id, company_id, display_name, email, country, team_id, address_one, city, zip_code)
    SELECT 'emp_bench' || lpad(g::text, 8, '0'), ${server.demo.companies.acme}, 'Bench Employee ' || g,
      'bench' || g || '@acme.example', (ARRAY['DE','US','FR','SE','ES'])[1 + g % 5], ${server.demo.teams.engineering},
      'Street ' || g, 'City', '10115'
    FROM generate_series(1, ${count}::int) AS g`);
  await server.core.db.query(sql`ANALYZE employees`);
}

async function run(backend: Backend, count: number) {
  const server = await startBenchServer(backend);
  try {
    await insertEmployees(server, count);
    const headers = { 'x-api-key': server.demo.apiKeys.admin };
    const deepPage = Math.floor(count / PAGE) - 1;
    // The cursor a client holds after walking to the page before the deep one.
    const [anchor] = await server.core.db.query<{ id: string }>(
      sql`SELECT id FROM employees ORDER BY id OFFSET ${(deepPage - 1) * PAGE - 1} LIMIT 1`,
    );
    const filters = fingerprint({ companyId: undefined, query: undefined, teamName: undefined, country: undefined });
    const cursor = encodeCursor({ after: anchor!.id, page: deepPage - 1, filters });
    const base = `${server.baseUrl}/v4/employees?limit=${PAGE}`;
    const check = await fetch(`${base}&cursor=${cursor}`, { headers });
    if (!check.ok) throw new Error(`deep cursor request failed: ${check.status} ${await check.text()}`);
    const first = await measure(base, headers, SECONDS);
    const keyset = await measure(`${base}&cursor=${cursor}`, headers, SECONDS);
    const offset = await measure(`${base}&page=${deepPage}`, headers, SECONDS);
    return [
      [backend, count, 'page 1', first.requestsPerSecond, first.p50, first.p99, first.errors],
      [backend, count, `page ${deepPage} by cursor`, keyset.requestsPerSecond, keyset.p50, keyset.p99, keyset.errors],
      [backend, count, `page ${deepPage} by page number`, offset.requestsPerSecond, offset.p50, offset.p99, offset.errors],
      ['', '', 'cursor deep ÷ page 1', (keyset.requestsPerSecond / first.requestsPerSecond).toFixed(2), '', '', ''],
    ];
  } finally {
    await server.close();
  }
}

const backends = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',') as Backend[];
const rows = [];
for (const backend of backends) for (const count of SIZES) rows.push(...(await run(backend, count)));
console.log(
  await writeResults(
    'list-employees',
    'npm run bench -- list-employees',
    ['store', 'employees', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
    rows,
    [
      `autocannon, 10 connections, ${SECONDS} s per row, limit=${PAGE}, admin key (both companies); autocannon in a separate process on loopback.`,
      'Every response also carries totalCount, a count over the same filter, which costs the same on every page.',
    ],
  ),
);
