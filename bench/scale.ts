import { raw, sql } from '../src/store/sql.js';
import { encodeCursor, fingerprint } from '../src/store/paging.js';
import { measure, postLoop, startBenchServer, writeResults, type Backend } from './lib.js';

/*
 * The orders paths at 10,000 and at 1,000,000 orders (with 200,000 employees and 500,000 devices
 * over 300 companies; the demo's Acme holds a third of everything, and its admin is the caller):
 * list page 1, a page 90 % deep by cursor, free-text search by serial number and by employee name,
 * one order by id, and create_order. PostgreSQL only at 1M (BENCH_SCALE_PGLITE=1 adds PGlite at
 * the small size).
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// Company of row g: Acme for every third row, else one of 299 others. Employees and devices come in
// multiples of 897 (3 × 299), so row g of orders, employees and devices all belong to one company.
const CYCLE = 897;
// BENCH_SCALE_MAX=10000 runs the small size only (a quick check of the benchmark itself).
const SIZES = [
  { orders: 10_000, employees: CYCLE * 2, devices: CYCLE * 6 },
  { orders: 1_000_000, employees: CYCLE * 223, devices: CYCLE * 557 },
].filter((size) => size.orders <= Number(process.env.BENCH_SCALE_MAX ?? Infinity));
const CREATE_STOCK = 30_000;

const pad = (n: number) => String(n).padStart(8, '0');

async function generate(server: Awaited<ReturnType<typeof startBenchServer>>, size: (typeof SIZES)[number]) {
  const { db } = server.core;
  const acme = server.demo.companies.acme;
  const company = (g: string) => sql`CASE WHEN ${raw(g)} % 3 = 0 THEN ${acme} ELSE 'co_scale' || (1 + ${raw(g)} % 299) END`;
  await db.query(sql`INSERT INTO companies (id, name) SELECT 'co_scale' || g, 'Scale Company ' || g FROM generate_series(1, 299) g`);
  await db.query(sql`
    INSERT INTO employees (id, company_id, display_name, email, country)
    SELECT 'emp_s' || lpad(g::text, 8, '0'), ${company('g')}, 'Scale Employee ' || g, 'scale' || g || '@scale.example',
      (ARRAY['DE','US','FR','SE','ES'])[1 + g % 5]
    FROM generate_series(1, ${size.employees}::int) g`);
  await db.query(sql`
    INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
    SELECT 'dev_s' || lpad(g::text, 8, '0'), ${company('g')}, 'SN-S-' || lpad(g::text, 8, '0'), 'Laptops', 'Computers',
      'Lenovo', 'ThinkPad T14', 'New', 'Assigned', 'DE'
    FROM generate_series(1, ${size.devices}::int) g`);
  await db.query(sql`
    INSERT INTO orders (id, company_id, order_type, status, employee_id, country, created_at, updated_at)
    SELECT 'ord_s' || lpad(g::text, 8, '0'), ${company('g')}, 'Deployment',
      (ARRAY['Pending','In Progress','Shipped','Delivered','Completed'])[1 + g % 5],
      'emp_s' || lpad((1 + (g - 1) % ${size.employees}::int)::text, 8, '0'), 'DE',
      now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval
    FROM generate_series(1, ${size.orders}::int) g`);
  await db.query(sql`
    INSERT INTO order_devices (order_id, device_id, role, status)
    SELECT 'ord_s' || lpad(g::text, 8, '0'), 'dev_s' || lpad((1 + (g - 1) % ${size.devices}::int)::text, 8, '0'), 'deliver', 'requested'
    FROM generate_series(1, ${size.orders}::int) g`);
  // Stock for create_order: Acme's own available laptops.
  await db.query(sql`
    INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
    SELECT 'dev_new' || lpad(g::text, 8, '0'), ${acme}, 'SN-N-' || lpad(g::text, 8, '0'), 'Laptops', 'Computers',
      'Lenovo', 'ThinkPad T14', 'New', 'Available', 'DE'
    FROM generate_series(1, ${CREATE_STOCK}::int) g`);
  await db.query(sql`ANALYZE`);
}

async function run(backend: Backend, size: (typeof SIZES)[number]) {
  const server = await startBenchServer(backend);
  try {
    const started = performance.now();
    await generate(server, size);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    const acme = server.demo.companies.acme;
    const headers = { 'x-api-key': server.demo.apiKeys.admin };
    const base = `${server.baseUrl}/v4/orders?companyId=${acme}&limit=50`;
    // A cursor 90 % into Acme's orders, newest first, as a client walking the pages would hold it.
    const [{ n }] = (await server.core.db.query<{ n: number }>(sql`SELECT count(*) AS n FROM orders WHERE company_id = ${acme}`)) as [{ n: number }];
    const deep = Math.floor((n * 0.9) / 50);
    const [anchor] = await server.core.db.query<{ id: string; createdAt: string }>(sql`
      SELECT id, created_at AS "createdAt" FROM orders WHERE company_id = ${acme} ORDER BY created_at DESC, id DESC OFFSET ${deep * 50 - 1} LIMIT 1`);
    const filters = fingerprint({ companyId: acme, status: undefined, orderType: undefined, query: undefined, employeeId: undefined, topLevel: false, sort: '-createdAt' });
    const cursor = encodeCursor({ after: anchor!.id, value: anchor!.createdAt, page: deep, filters });
    // A row of Acme's (a multiple of 3) halfway through.
    const acmeRow = (total: number) => Math.floor(total / 2) - (Math.floor(total / 2) % 3);
    const serial = `SN-S-${pad(acmeRow(size.devices))}`;
    const name = `Scale Employee ${acmeRow(size.employees)}`;
    const urls = [
      ['list_orders page 1', base],
      ['list_orders page 90 % deep (cursor)', `${base}&cursor=${cursor}`],
      ['list_orders query=serial number', `${base}&query=${serial}`],
      ['list_orders query=employee name', `${base}&query=${encodeURIComponent(name)}`],
      ['get_order', `${server.baseUrl}/v4/orders/ord_s${pad(acmeRow(size.orders))}`],
    ] as const;
    for (const [label, url] of urls) {
      const probe = await fetch(url, { headers });
      const body = (await probe.json()) as { ok: boolean; data?: { orders?: unknown[] } };
      if (!probe.ok || (body.data?.orders && body.data.orders.length === 0)) throw new Error(`${label}: ${probe.status} ${JSON.stringify(body).slice(0, 300)}`);
    }
    const rows: (string | number)[][] = [[backend, size.orders, `generated in ${seconds} s (${n} of Acme)`, '', '', '', '']];
    for (const [label, url] of urls) {
      const m = await measure(url, headers, SECONDS);
      rows.push([backend, size.orders, label, m.requestsPerSecond, m.p50, m.p99, m.errors]);
    }
    const bodies = Array.from({ length: CREATE_STOCK }, (_, i) => ({
      orderType: 'Deployment',
      employeeId: server.demo.employees.dana,
      productIds: [`dev_new${pad(i + 1)}`],
    }));
    const create = await postLoop(`${server.baseUrl}/v4/orders`, headers, bodies, SECONDS);
    rows.push([backend, size.orders, 'create_order (Deployment)', create.requestsPerSecond, create.p50, create.p99, create.errors]);
    return rows;
  } finally {
    await server.close();
  }
}

const rows: (string | number)[][] = [];
for (const size of SIZES) {
  for (const backend of ['postgres', ...(process.env.BENCH_SCALE_PGLITE && size.orders <= 10_000 ? ['pglite' as const] : [])] as Backend[]) {
    rows.push(...(await run(backend, size)));
  }
}
console.log(
  writeResults('scale', 'npm run bench -- scale', ['store', 'orders', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'], rows, [
    `autocannon in a separate process (creates from a fetch worker), 10 connections, ${SECONDS} s per row, on loopback; PostgreSQL 15 on the same 2-core machine; admin key of Acme, limit=50.`,
    'Targets (issue 10): page 1 and a deep cursor page at 1M within 1.5× of 10k; search p50 ≤ 20 ms at 1M with 10 clients; create_order at 1M within 1.2× of 10k.',
  ]),
);
