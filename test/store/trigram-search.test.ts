import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containsText, sql, type Sql } from '../../src/store/sql.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * Free-text search is served by trigram indexes (migration 0012) and means what it meant before:
 * a case-insensitive substring. On a generated set, the API's search, the same query with index
 * scans switched off (a plain scan of every row) and a substring test in JavaScript find the same
 * employees, and the same devices for the inventory's search (serial, and make and model as one
 * text); the trigram indexes can serve a query on both columns.
 */

const WORDS = ['Anna', 'Bernd', 'Chiara', 'Dmitri', 'Ella', 'Farid', 'Greta', 'Hiro', 'Ines', 'Jonas', 'Kai', 'Lea'];
const SURNAMES = ['Müller_Ops', 'Smith%Lab', 'Ng', 'O\'Brien', 'Back\\Slash', 'Annaberg', 'Rossi', 'Kowalski'];
const COUNT = 3000;
const QUERIES = ['ann', 'ANNA', 'ella', 'a', 'ng', 'smith%', '%lab', '_ops', 'r_s', "o'b", 'back\\s', 'hiro.rossi', '@', 'zzz', 'ner'];
const MAKES = [['Lenovo', 'ThinkPad T14'], ['Apple', 'MacBook Air'], ['Dell_Pro', 'XPS 13'], ['HP%Elite', 'EliteBook 840'], ['Fairphone', "O'Phone 5"]] as const;
const DEVICES = 1500;
const DEVICE_QUERIES = ['pad', 'THINK', 'lenovo think', 'o t', 'dell_', 'hp%', '_pro x', 'sn-00', '0042', '-x7', 'air', "o'p", 'zzz'];

describe.each(backends())('free-text search by trigram index [%s]', (backend) => {
  let t: TestApp;
  const people: { id: string; name: string; email: string }[] = [];
  const devices: { id: string; serial: string; manufacturer: string; model: string }[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend);
    for (let i = 0; i < COUNT; i++) {
      const first = WORDS[i % WORDS.length]!;
      const last = SURNAMES[(i * 7) % SURNAMES.length]!;
      const name = `${first} ${last} ${i}`;
      people.push({ id: `emp_trgm${String(i).padStart(5, '0')}`, name, email: `${first}.${last.replace(/[^A-Za-z]/g, '')}${i}@search.example`.toLowerCase() });
    }
    await t.core.db.query(sql`
      INSERT INTO employees (id, company_id, display_name, email)
      SELECT * FROM unnest(${people.map((p) => p.id)}::text[], ${people.map(() => t.demo.companies.acme)}::text[],
        ${people.map((p) => p.name)}::text[], ${people.map((p) => p.email)}::text[])`);
    for (let i = 0; i < DEVICES; i++) {
      const [manufacturer, model] = MAKES[i % MAKES.length]!;
      devices.push({ id: `dev_trgm${String(i).padStart(5, '0')}`, serial: `SN-${String(i).padStart(5, '0')}-X${i % 9}`, manufacturer, model });
    }
    await t.core.db.query(sql`
      INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
      SELECT d.id, ${t.demo.companies.acme}, d.serial, 'Laptops', 'Computers', d.manufacturer, d.model, 'New', 'Available', 'DE'
      FROM unnest(${devices.map((d) => d.id)}::text[], ${devices.map((d) => d.serial)}::text[], ${devices.map((d) => d.manufacturer)}::text[],
        ${devices.map((d) => d.model)}::text[]) AS d(id, serial, manufacturer, model)`);
    await t.core.db.query(sql`ANALYZE employees`);
    await t.core.db.query(sql`ANALYZE devices`);
  });
  afterAll(() => t?.close());

  /** The generated rows (ids starting `prefix`) `where` finds with the trigram indexes, and with index scans switched off (a plain scan). */
  async function bothWays(from: Sql, where: Sql, prefix: string): Promise<{ indexed: string[]; scanned: string[]; all: number }> {
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id).filter((id) => id.startsWith(prefix)).sort();
    const scanned = await t.core.db.transaction(async (tx) => {
      await tx.query(sql`SET LOCAL enable_indexscan = off`);
      await tx.query(sql`SET LOCAL enable_bitmapscan = off`);
      return tx.query<{ id: string }>(sql`SELECT id FROM ${from} WHERE ${where}`);
    });
    const indexed = await t.core.db.query<{ id: string }>(sql`SELECT id FROM ${from} WHERE ${where}`);
    return { indexed: ids(indexed), scanned: ids(scanned), all: indexed.length };
  }

  /** The API's totalCount for `query` on Acme's list at `path`. */
  async function apiTotal(path: string, query: string): Promise<number> {
    const response = await t.app.inject({
      method: 'GET',
      url: `${path}?companyId=${t.demo.companies.acme}&limit=50&query=${encodeURIComponent(query)}`,
      headers: { 'x-api-key': t.demo.apiKeys.admin },
    });
    expect(response.statusCode).toBe(200);
    return response.json().data.totalCount;
  }

  it.each(QUERIES)('"%s": the API, a plain scan and a substring test agree on employees', async (q) => {
    const expected = people.filter((p) => p.name.toLowerCase().includes(q.toLowerCase()) || p.email.includes(q.toLowerCase())).map((p) => p.id);
    const where = sql`e.company_id = ${t.demo.companies.acme} AND ${containsText(q, [sql`e.display_name`, sql`e.email`])}`;
    const { indexed, scanned, all } = await bothWays(sql`employees e`, where, 'emp_trgm');
    expect(scanned).toEqual(expected.sort());
    expect(indexed).toEqual(expected);
    // The demo's own Acme employees may match too: the API counts what the indexed query finds.
    expect(await apiTotal('/v4/employees', q)).toBe(all);
  });

  it.each(DEVICE_QUERIES)('"%s": the API, a plain scan and a substring test agree on the inventory', async (q) => {
    const text = q.toLowerCase();
    const expected = devices.filter((d) => d.serial.toLowerCase().includes(text) || `${d.manufacturer} ${d.model}`.toLowerCase().includes(text)).map((d) => d.id);
    const where = sql`d.company_id = ${t.demo.companies.acme} AND ${containsText(q, [sql`d.serial_number`, sql`(d.manufacturer || ' ' || d.model)`])}`;
    const { indexed, scanned, all } = await bothWays(sql`devices d`, where, 'dev_trgm');
    expect(scanned).toEqual(expected.sort());
    expect(indexed).toEqual(expected);
    expect(await apiTotal('/v4/inventory', q)).toBe(all);
  });

  it('writes every trigram index straight into its tree, with no pending list for searches to read through', async () => {
    const indexes = await t.core.db.query<{ name: string; options: string[] | null }>(sql`
      SELECT c.relname AS name, c.reloptions AS options
      FROM pg_class c JOIN pg_am am ON am.oid = c.relam
      WHERE am.amname = 'gin' AND c.relnamespace = current_schema()::regnamespace ORDER BY c.relname`);
    expect(indexes.map((index) => index.name)).toHaveLength(8);
    for (const index of indexes) expect({ [index.name]: index.options }).toEqual({ [index.name]: ['fastupdate=off'] });
  });

  it('can answer a search from the trigram indexes of both columns', async () => {
    const one = people[2345]!;
    // At this size a scan is cheaper than any index; with scans priced out, the planner shows which index can serve it.
    const plan = await t.core.db.transaction(async (tx) => {
      await tx.query(sql`SET LOCAL enable_seqscan = off`);
      return tx.query<Record<string, string>>(sql`EXPLAIN SELECT e.id FROM employees e WHERE ${containsText(one.email, [sql`e.display_name`, sql`e.email`])}`);
    });
    const text = plan.map((row) => Object.values(row).join(' ')).join('\n');
    expect(text).toMatch(/employees_name_trgm_idx/);
    expect(text).toMatch(/employees_email_trgm_idx/);
  });
});
