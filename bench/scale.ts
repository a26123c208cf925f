import { raw, sql, type Sql } from '../src/store/sql.js';
import { encodeCursor, fingerprint } from '../src/store/paging.js';
import { listOrders } from '../src/domain/orders/read.js';
import { measureRounds, pairedRatio, postLoop, PAIRED_RATIO_NOTE, ROUNDS_NOTE, schemaUrl, startBenchServer, writeResults, type Backend, type LoadTarget, type Measurement, type OwnLoad, type Row } from './lib.js';
import { runPgbench } from './support/pgbench.js';

/*
 * The orders paths at 10,000, 100,000 and 1,000,000 orders (at 1M: 200,000 employees and 500,000
 * devices over 300 companies; the demo's Acme holds a third of everything, and its admin is the
 * caller): list page 1, a page 90 % deep by cursor, free-text search by a serial number, a full name
 * and a last name, one order by id, and create_order. PostgreSQL at every size; PGlite up to
 * BENCH_SCALE_PGLITE orders.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// Company of row g: Acme for every third row, else one of 299 others. Employees and devices come in
// multiples of 897 (3 × 299), so row g of orders, employees and devices all belong to one company.
const CYCLE = 897;
// BENCH_SCALE_MAX=10000 runs the small size only (a quick check of the benchmark itself).
const SIZES = [
  { orders: 10_000, employees: CYCLE * 2, devices: CYCLE * 6 },
  { orders: 100_000, employees: CYCLE * 22, devices: CYCLE * 56 },
  { orders: 1_000_000, employees: CYCLE * 223, devices: CYCLE * 557 },
].filter((size) => size.orders <= Number(process.env.BENCH_SCALE_MAX ?? Infinity));
// BENCH_SCALE_PGLITE=100000 also runs the embedded store up to that many orders.
const PGLITE_MAX = Number(process.env.BENCH_SCALE_PGLITE ?? 0);
const CREATE_STOCK = 30_000;

const pad = (n: number) => String(n).padStart(8, '0');

// Data shaped like real data where search meets it: ids as newId makes them, 100 first × 200 last
// names (a full name is shared by about ten people at 200k, as in a large workforce) and vendor-style
// serials. Uniform values (every serial `SN-S-000…`, every name `Scale Employee n`) would give every
// row the same trigrams, a case no trigram index can narrow; the README states what it costs.
const FIRST_NAMES = `Anna Ben Clara David Emma Felix Greta Hugo Ida Jonas Karla Leon Mia Noah Olivia Paul Quinn Rosa
  Samuel Tara Umar Vera William Xenia Yusuf Zoe Amelie Bruno Chiara Dario Elif Fatima Georg Hanna Ivan Julia Kai Lina
  Marco Nina Oskar Priya Rafael Sofia Tomas Ulla Viktor Wen Yara Aiko Bilal Carmen Dmitri Eva Farid Gabriel Helga Ines
  Jakob Kenji Lucia Mateo Nadia Omar Pia Ravi Selin Theo Valentina Wanda Ximena Yosef Zeynep Arjun Beatriz Cyril Dana
  Emil Freya Goran Hiro Isla Jana Kofi Lars Maja Nils Ola Pedro Rana Sven Tilda Uwe Vanessa Wiktor Yuki Zora Aaron Leni`
  .split(/\s+/);
const LAST_NAMES = `Schmidt Mueller Schneider Fischer Weber Meyer Wagner Becker Schulz Hoffmann Koch Richter Klein Wolf
  Schroeder Neumann Schwarz Zimmermann Braun Krueger Hofmann Hartmann Lange Schmitt Werner Krause Meier Lehmann Schmid
  Schulze Maier Koehler Herrmann Walter Koenig Mayer Huber Kaiser Fuchs Peters Lang Scholz Moeller Weiss Jung Hahn
  Schubert Vogel Friedrich Keller Guenther Frank Berger Winkler Roth Beck Lorenz Baumann Franke Albrecht Schuster Simon
  Ludwig Boehm Winter Kraus Martin Schumacher Kraemer Vogt Stein Jaeger Otto Sommer Gross Seidel Heinrich Brandt Haas
  Schreiber Graf Dietrich Ziegler Kuhn Kuehn Pohl Engel Horn Busch Bergmann Thomas Voigt Sauer Arnold Wolff Pfeiffer
  Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson Anderson
  Taylor Moore Jackson Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott
  Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Dubois Laurent Bernard
  Moreau Lefebvre Leroy Roux Fournier Girard Bonnet Dupont Lambert Fontaine Rousseau Blanc Guerin Muller Henry Perrin
  Morin Mathieu Clement Gauthier Nilsson Johansson Andersson Karlsson Eriksson Larsson Olsson Persson Svensson
  Rossi Russo Ferrari Esposito Bianchi Romano Colombo Ricci Marino Greco Bruni Gallo Conti Costa Giordano Mancini`
  .split(/\s+/);

// The 10 Crockford base32 digits of n's low 50 bits (the alphabet of src/store/ids.ts), as one
// expression so PostgreSQL inlines the function.
const BASE32_DIGITS = Array.from({ length: 10 }, (_, i) => `substr('0123456789abcdefghjkmnpqrstvwxyz', ((n >> ${45 - 5 * i}) & 31)::int + 1, 1)`);

/** 50 pseudo-random bits from a seed text. */
const bits = (seed: Sql) => sql`('x' || substr(md5(${seed}), 1, 13))::bit(52)::bigint`;

/**
 * The id of row `g` of a kind, as newId makes one: its creation time (`base` minus g seconds), then
 * 10 random characters. A pure function of g, so orders can name their employee and device.
 */
const idOf = (prefix: string, g: Sql, base: number) =>
  sql`${prefix + '_'} || bench_base32(${base}::bigint - ${g} * 1000) || bench_base32(${bits(sql`${prefix} || ${g}`)})`;

/**
 * Each table is analyzed once filled: a pooled connection keeps the plans of its foreign-key checks, made
 * while the tables held the demo's few rows, until the table's statistics change. With autovacuum off, as on
 * these machines, nothing else changed them: the million checks of the order lines ran for over half an hour
 * (a profile showed each one comparing key after key of a B-tree) instead of seconds.
 */
async function generate(server: Awaited<ReturnType<typeof startBenchServer>>, size: (typeof SIZES)[number]) {
  const { db } = server.core;
  const acme = server.demo.companies.acme;
  const base = Date.now();
  const g = raw('g');
  const company = sql`CASE WHEN g % 3 = 0 THEN ${acme} ELSE 'co_scale' || (1 + g % 299) END`;
  const pick = (names: string[], seed: Sql) => sql`(${names}::text[])[1 + ${bits(seed)} % ${names.length}]`;
  await db.query(sql`CREATE FUNCTION bench_base32(n bigint) RETURNS text LANGUAGE sql IMMUTABLE
    AS $$ SELECT ${raw(BASE32_DIGITS.join(' || '))} $$`);
  await db.query(sql`INSERT INTO companies (id, name) SELECT 'co_scale' || g, 'Scale Company ' || g FROM generate_series(1, 299) g`);
  await db.query(sql`
    INSERT INTO employees (id, company_id, display_name, email, country)
    SELECT ${idOf('emp', g, base)}, ${company}, first || ' ' || last,
      lower(first || '.' || last || g) || '@company' || (g % 299) || '.example', (ARRAY['DE','US','FR','SE','ES'])[1 + g % 5]
    FROM generate_series(1, ${size.employees}::int) g,
      LATERAL (SELECT ${pick(FIRST_NAMES, sql`'first' || g`)} AS first, ${pick(LAST_NAMES, sql`'last' || g`)} AS last) name`);
  await db.exec('ANALYZE employees');
  // Three vendors' serial shapes: PF + 6, C02 + 9, and 7 characters. g times an odd number, modulo a
  // power of two, is one-to-one, so serials look scattered and never repeat.
  const scattered = raw('bench_base32(g::bigint * 2654435761 % 35184372088832)');
  await db.query(sql`
    INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
    SELECT ${idOf('dev', g, base)}, ${company},
      upper(CASE g % 3 WHEN 0 THEN 'pf' || right(${scattered}, 6) WHEN 1 THEN 'c02' || right(${scattered}, 9) ELSE right(${scattered}, 7) END),
      'Laptops', 'Computers', 'Lenovo', 'ThinkPad T14', 'New', 'Assigned', 'DE'
    FROM generate_series(1, ${size.devices}::int) g`);
  await db.exec('ANALYZE devices');
  const nth = (kind: string, count: number) => idOf(kind, sql`(1 + (g - 1) % ${count}::int)`, base);
  await db.query(sql`
    INSERT INTO orders (id, company_id, order_type, status, employee_id, country, created_at, updated_at)
    SELECT ${idOf('ord', g, base)}, ${company}, 'Deployment', (ARRAY['Pending','In Progress','Shipped','Delivered','Completed'])[1 + g % 5],
      ${nth('emp', size.employees)}, 'DE', to_timestamp((${base}::bigint - g * 1000) / 1000.0), to_timestamp((${base}::bigint - g * 1000) / 1000.0)
    FROM generate_series(1, ${size.orders}::int) g`);
  await db.exec('ANALYZE orders');
  await db.query(sql`
    INSERT INTO order_devices (order_id, device_id, role, status)
    SELECT ${idOf('ord', g, base)}, ${nth('dev', size.devices)}, 'deliver', 'requested'
    FROM generate_series(1, ${size.orders}::int) g`);
  await db.query(sql`DROP FUNCTION bench_base32`);
  // Stock for create_order: Acme's own available laptops.
  await db.query(sql`
    INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
    SELECT 'dev_new' || lpad(g::text, 8, '0'), ${acme}, 'SN-N-' || lpad(g::text, 8, '0'), 'Laptops', 'Computers',
      'Lenovo', 'ThinkPad T14', 'New', 'Available', 'DE'
    FROM generate_series(1, ${CREATE_STOCK}::int) g`);
  // Where autovacuum would have brought a table this size: statistics, and the visibility map that
  // lets a search read covering indexes without visiting the heap.
  await db.exec('VACUUM ANALYZE');
}

const SEARCHES = ['list_orders query=serial number', 'list_orders query=full name', 'list_orders query=last name'] as const;
const PATHS = ['list_orders page 1', 'list_orders page 90 % deep (cursor)', ...SEARCHES, 'get_order'] as const;
type PathLabel = (typeof PATHS)[number];
type SearchLabel = (typeof SEARCHES)[number];
const isSearch = (path: PathLabel): path is SearchLabel => (SEARCHES as readonly string[]).includes(path);

interface Generated {
  server: Awaited<ReturnType<typeof startBenchServer>>;
  size: (typeof SIZES)[number];
  /** The row naming how the data was made and what is searched. */
  note: string;
  urls: Record<PathLabel, string>;
  /** What each search looks for. */
  terms: Record<SearchLabel, string>;
  headers: Record<string, string>;
}

/** A server on `backend` holding `size`, and the URL of each path, each checked to answer. */
async function prepare(backend: Backend, size: (typeof SIZES)[number]): Promise<Generated> {
  const server = await startBenchServer(backend);
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
  // An order of Acme's halfway through its list: get_order fetches it, and the searches look for
  // its device's serial, its employee's full name, and their last name alone (about 1 in 200 people).
  const [sample] = await server.core.db.query<{ id: string; name: string; serial: string }>(sql`
    SELECT o.id, e.display_name AS name, d.serial_number AS serial
    FROM orders o JOIN employees e ON e.id = o.employee_id JOIN order_devices od ON od.order_id = o.id JOIN devices d ON d.id = od.device_id
    WHERE o.company_id = ${acme} ORDER BY o.created_at DESC, o.id DESC OFFSET ${Math.floor(n / 2)} LIMIT 1`);
  const lastName = sample!.name.split(' ')[1]!;
  const terms: Record<SearchLabel, string> = {
    'list_orders query=serial number': sample!.serial,
    'list_orders query=full name': sample!.name,
    'list_orders query=last name': lastName,
  };
  const search = (path: SearchLabel) => `${base}&query=${encodeURIComponent(terms[path])}`;
  const urls: Record<PathLabel, string> = {
    'list_orders page 1': base,
    'list_orders page 90 % deep (cursor)': `${base}&cursor=${cursor}`,
    'list_orders query=serial number': search('list_orders query=serial number'),
    'list_orders query=full name': search('list_orders query=full name'),
    'list_orders query=last name': search('list_orders query=last name'),
    get_order: `${server.baseUrl}/v4/orders/${sample!.id}`,
  };
  for (const [label, url] of Object.entries(urls)) {
    const probe = await fetch(url, { headers });
    const body = (await probe.json()) as { ok: boolean; data?: { orders?: unknown[] } };
    if (!probe.ok || (body.data?.orders && body.data.orders.length === 0)) throw new Error(`${label}: ${probe.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  const note = `generated in ${seconds} s (${n} of Acme; searched: ${sample!.serial}, ${sample!.name}, ${lastName})`;
  return { server, size, note, urls, terms, headers };
}

/**
 * A search's statement as the store sends it for the benchmark's request (the caller's scope, the
 * term, limit=50), run once through the store to check that it finds what the endpoint found.
 */
async function searchStatement({ server, urls, terms, headers }: Generated, path: SearchLabel): Promise<Sql> {
  const principal = await server.core.auth.authenticate(headers);
  let statement: Sql | undefined;
  const page = await listOrders(
    { query: (sent) => ((statement = sent), server.core.db.query(sent)) },
    principal,
    { companyId: server.demo.companies.acme, limit: 50, query: terms[path], topLevel: false, sort: { field: 'createdAt', descending: true } },
  );
  const served = (await (await fetch(urls[path], { headers })).json()) as { data: { totalCount: number } };
  if (!statement || page.totalCount !== served.data.totalCount) throw new Error(`${path}: the statement found ${page.totalCount}, the endpoint ${served.data.totalCount}`);
  return statement;
}

/**
 * The search's statement under pgbench, 10 clients, measured in the rounds beside the search itself. Its CPU
 * columns stay empty: pgbench's backends exit with it, before their CPU time can be read.
 */
async function statementAlone(g: Generated, path: SearchLabel): Promise<OwnLoad> {
  const statement = await searchStatement(g, path);
  return {
    measure: async (seconds) => ({
      ...(await runPgbench(schemaUrl(g.server.schema!), statement, 10, seconds)),
      errors: 0,
      cpuMicrosPerRequest: 0,
      databaseCpuMicrosPerRequest: 0,
    }),
  };
}

async function createOrders({ server, headers }: Generated): Promise<Measurement> {
  const bodies = Array.from({ length: CREATE_STOCK }, (_, i) => ({
    orderType: 'Deployment',
    employeeId: server.demo.employees.dana,
    productIds: [`dev_new${pad(i + 1)}`],
  }));
  return postLoop(`${server.baseUrl}/v4/orders`, headers, bodies, SECONDS);
}

/**
 * Every size of one store at once, each path measured across the sizes in turn, round after round
 * (measureRounds): on this machine one 5 s run swung by up to 30 % from the next, so a size measured
 * minutes after another could show a drift of the machine as a cost of the size.
 */
async function run(backend: Backend, sizes: (typeof SIZES)[number][]): Promise<Row[]> {
  const generated: Generated[] = [];
  try {
    for (const size of sizes) generated.push(await prepare(backend, size));
    // Path-major, so each path's sizes are measured one right after the other.
    const keyOf = (g: Generated, path: PathLabel) => `${g.size.orders} ${path}`;
    const targets: Record<string, LoadTarget | OwnLoad> = {};
    const aloneOf = (g: Generated, path: SearchLabel) => `${keyOf(g, path)}: its statement alone`;
    for (const path of PATHS) {
      for (const g of generated) {
        targets[keyOf(g, path)] = { url: g.urls[path], headers: g.headers };
        if (backend === 'postgres' && isSearch(path)) targets[aloneOf(g, path)] = await statementAlone(g, path);
      }
    }
    const measured = await measureRounds(targets, SECONDS);
    const creates = new Map<Generated, Measurement>();
    for (const g of generated) creates.set(g, await createOrders(g));
    const rows: Row[] = [];
    for (const g of generated) {
      rows.push([backend, g.size.orders, g.note, '', '', '', '', '', '', '']);
      const row = (path: string, m: Measurement): Row => [
        backend,
        g.size.orders,
        path,
        m.requestsPerSecond,
        m.p50,
        m.mean,
        m.p99,
        m.errors,
        m.cpuMicrosPerRequest,
        backend === 'postgres' ? m.databaseCpuMicrosPerRequest : '',
      ];
      for (const path of PATHS) rows.push(row(path, measured[keyOf(g, path)]!));
      rows.push(row('create_order (Deployment)', creates.get(g)!));
      for (const path of SEARCHES) {
        const alone = measured[aloneOf(g, path)];
        if (!alone) continue;
        rows.push([backend, g.size.orders, `${path}: its statement alone (pgbench)`, alone.requestsPerSecond, alone.p50, alone.mean, alone.p99, alone.errors, '', '']);
        rows.push([backend, g.size.orders, `ratio ${path} ÷ its statement alone (req/s)`, pairedRatio(measured[keyOf(g, path)]!, alone), '', '', '', '', '', '']);
      }
    }
    const [smallest, largest] = [generated[0]!, generated.at(-1)!];
    if (largest !== smallest) {
      // Both latencies' ratios: the p50 comes in whole milliseconds, a fifth of a 5 ms figure; the mean has two decimals.
      const ratio = (path: string, small: Measurement, large: Measurement): Row => [
        backend,
        `${largest.size.orders} ÷ ${smallest.size.orders}`,
        `latency ratio: ${path}`,
        '',
        (large.p50 / small.p50).toFixed(2),
        (large.mean / small.mean).toFixed(2),
        '',
        '',
        '',
        '',
      ];
      for (const path of ['list_orders page 1', 'list_orders page 90 % deep (cursor)'] as const) {
        rows.push(ratio(path, measured[keyOf(smallest, path)]!, measured[keyOf(largest, path)]!));
      }
      rows.push(ratio('create_order (Deployment)', creates.get(smallest)!, creates.get(largest)!));
    }
    return rows;
  } finally {
    for (const g of generated) await g.server.close();
  }
}

const rows: Row[] = [];
rows.push(...(await run('postgres', SIZES)));
const pgliteSizes = SIZES.filter((size) => size.orders <= PGLITE_MAX);
if (pgliteSizes.length > 0) rows.push(...(await run('pglite', pgliteSizes)));
console.log(
  await writeResults('scale', 'npm run bench -- scale', ['store', 'orders', 'request', 'req/s', 'p50 ms', 'mean ms', 'p99 ms', 'errors', 'server CPU µs/req', 'PostgreSQL CPU µs/req'], rows, [
    `autocannon in a separate process (creates from a fetch worker), 10 connections, ${SECONDS} s per row, on loopback; PostgreSQL 15 on the same 2-core machine; admin key of Acme, limit=50.`,
    'Every size of a store is generated first and kept; each path is then measured across the sizes in turn. ' + ROUNDS_NOTE,
    'Its statement alone: the search’s SQL as the store sends it for that request (captured, and checked to find the same total), prepared and planned as the store does, run by pgbench with 10 clients and no server in front, in the rounds beside the search: the most this machine’s PostgreSQL answers of it. Latencies from pgbench’s log of every transaction. The ratio: the project’s req/s over it, paired by round. ' + PAIRED_RATIO_NOTE,
    'Server CPU µs/req: the benchmark process’s CPU time (the server runs in it; on PGlite it includes the database); PostgreSQL CPU µs/req: that of every postgres process on the machine. Both from /proc over the requests answered, in the row’s median run: on two cores, their sum is what bounds the row’s throughput.',
    'Targets (issue 10): page 1 and a deep cursor page at 1M within 1.5× of 10k; search p50 ≤ 20 ms at 1M with 10 clients; create_order at 1M within 1.2× of 10k. Ratios are read from the mean latency (two decimals); the p50, in whole milliseconds, is given beside it.',
  ]),
);
