import { sql } from '../src/store/sql.js';
import { measure, postLoop, startBenchServer, benchEachBackend, type Backend } from './lib.js';

/*
 * create_order throughput (Deployments, each of its own available device) and list_orders at
 * 100,000 orders: page 1, a status filter, and free-text search by employee name and by serial.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ORDERS = 100_000;
const STOCK = 20_000;

async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  try {
    const { db } = server.core;
    const acme = server.demo.companies.acme;
    await db.query(sql`
      INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
      SELECT 'dev_bench' || lpad(g::text, 8, '0'), ${acme}, 'SN-B-' || lpad(g::text, 8, '0'), 'Laptops', 'Computers',
        'Lenovo', 'ThinkPad T14', 'New', 'Available', 'DE'
      FROM generate_series(1, ${STOCK + ORDERS}::int) AS g`);
    await db.query(sql`
      INSERT INTO employees (id, company_id, display_name, email, country, team_id, address_one, city, zip_code)
      SELECT 'emp_bench' || lpad(g::text, 8, '0'), ${acme}, 'Bench Employee ' || g, 'bench' || g || '@acme.example', 'DE',
        ${server.demo.teams.engineering}, 'Street ' || g, 'Berlin', '10115'
      FROM generate_series(1, 10000) AS g`);
    const headers = { 'x-api-key': server.demo.apiKeys.admin };

    const bodies = Array.from({ length: STOCK }, (_, i) => ({
      orderType: 'Deployment',
      employeeId: server.demo.employees.dana,
      productIds: [`dev_bench${String(i + 1).padStart(8, '0')}`],
    }));
    const create = await postLoop(`${server.baseUrl}/v4/orders`, headers, bodies, SECONDS);

    // 100,000 orders of 10,000 employees, one device each, in several states.
    await db.query(sql`
      INSERT INTO orders (id, company_id, order_type, status, employee_id, country, created_at, updated_at)
      SELECT 'ord_bench' || lpad(g::text, 8, '0'), ${acme}, 'Deployment',
        (ARRAY['Pending','In Progress','Shipped','Delivered','Completed'])[1 + g % 5],
        'emp_bench' || lpad((1 + g % 10000)::text, 8, '0'), 'DE',
        now() - (g || ' minutes')::interval, now() - (g || ' minutes')::interval
      FROM generate_series(1, ${ORDERS}::int) AS g`);
    await db.query(sql`
      INSERT INTO order_devices (order_id, device_id, role, status)
      SELECT 'ord_bench' || lpad(g::text, 8, '0'), 'dev_bench' || lpad((${STOCK} + g)::text, 8, '0'), 'deliver', 'requested'
      FROM generate_series(1, ${ORDERS}::int) AS g`);
    await db.query(sql`ANALYZE`);

    const list = `${server.baseUrl}/v4/orders?limit=50`;
    const rows: Array<Array<string | number>> = [[backend, 'create_order (Deployment)', create.requestsPerSecond, create.p50, create.p99, create.errors]];
    for (const [label, url] of [
      ['list_orders page 1', list],
      ['list_orders status=shipped', `${list}&status=shipped`],
      ['list_orders query=employee name', `${list}&query=Bench%20Employee%204242`],
      ['list_orders query=serial', `${list}&query=SN-B-00042424`],
    ] as const) {
      const m = await measure(url, headers, SECONDS);
      rows.push([backend, label, m.requestsPerSecond, m.p50, m.p99, m.errors]);
    }
    return rows;
  } finally {
    await server.close();
  }
}

await benchEachBackend('orders', ['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'], run, [
    `10 connections, ${SECONDS} s per row, on loopback; creates from a separate fetch worker (each body names its own device), lists with autocannon in a separate process.`,
    `create_order runs on the demo data plus ${STOCK + ORDERS} devices; the lists run over ${ORDERS} orders of 10,000 employees (admin key), limit=50.`,
  ]);
