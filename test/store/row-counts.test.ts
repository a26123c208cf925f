import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw, sql, type Sql } from '../../src/store/sql.js';
import { companyScope } from '../../src/access/scope.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * A list's totalCount for a whole company comes from counters the writes keep (migration 0013)
 * instead of counting every row. It must stay exact: after concurrent inserts and deletes, rolled
 * back transactions and rows moved between companies, every counter equals count(*), and the API's
 * totalCount of each list equals the rows there are.
 */

const RELATIONS = ['employees', 'teams', 'devices', 'orders', 'company_addresses'] as const;
const LISTS = { employees: 'employees', teams: 'teams', devices: 'inventory', orders: 'orders', company_addresses: 'company/addresses' };

describe.each(backends())('row counters [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t?.close());

  async function countersMatchRows() {
    for (const relation of RELATIONS) {
      const counted = await t.core.db.query<{ company: string; n: number }>(sql`
        SELECT company_id AS company, sum(n) AS n FROM row_counts WHERE relation = ${relation} GROUP BY company_id HAVING sum(n) <> 0 ORDER BY 1`);
      const actual = await t.core.db.query<{ company: string; n: number }>(
        sql`SELECT company_id AS company, count(*) AS n FROM ${raw(relation)} GROUP BY company_id ORDER BY 1`,
      );
      expect(counted, relation).toEqual(actual);
    }
  }

  it('counts what the demo seeded', countersMatchRows);

  it.each([
    ['status', 'Shipped', 'orders_company_status_idx'],
    ['order_type', 'Deployment', 'orders_company_type_idx'],
  ])('counts and pages orders filtered by %s on an index of those orders, not by reading every order of the company', async (column, value, index) => {
    const acme = t.demo.companies.acme;
    // Orders of five statuses and three types, enough that the company's index alone is no longer as good.
    await t.core.db.query(sql`
      INSERT INTO orders (id, company_id, order_type, status, country, created_at, updated_at)
      SELECT 'ord_counted' || g, ${acme}, (ARRAY['Deployment', 'Return', 'Purchase for Inventory'])[1 + g % 3],
        (ARRAY['Pending', 'In Progress', 'Shipped', 'Delivered', 'Completed'])[1 + g % 5], 'DE', now(), now()
      FROM generate_series(1, 3000) g`);
    try {
      await t.core.db.query(sql`ANALYZE orders`);
      // With scans priced out, the plan shows which index serves the count.
      const plan = await t.core.db.transaction(async (tx) => {
        await tx.query(sql`SET LOCAL enable_seqscan = off`);
        await tx.query(sql`SET LOCAL enable_bitmapscan = off`);
        const filtered = sql`${companyScope([acme], 'o')} AND o.${raw(column)} = ${value}`;
        const explain = (statement: Sql) => tx.query<Record<string, string>>(sql`EXPLAIN ${statement}`);
        return Promise.all([
          explain(sql`SELECT count(*) FROM orders o WHERE ${filtered}`),
          explain(sql`SELECT o.id FROM orders o WHERE ${filtered} ORDER BY o.created_at DESC, o.id DESC LIMIT 51`),
        ]);
      });
      const [count, page] = plan.map((rows) => rows.map((row) => Object.values(row).join(' ')).join('\n'));
      expect(count).toMatch(new RegExp(`using ${index}`));
      expect(count).toMatch(new RegExp(`Index Cond: .*${column} = `));
      // The page is read from the index in its order and stops at the limit: nothing is sorted.
      expect(page).toMatch(new RegExp(`Backward using ${index}`));
      expect(page).not.toMatch(/Sort/);
    } finally {
      await t.core.db.query(sql`DELETE FROM orders WHERE id LIKE 'ord_counted%'`);
    }
  });

  it('stays exact under concurrent inserts, deletes, rollbacks and moves between companies', async () => {
    const { acme, globex } = t.demo.companies;
    const writer = async (w: number) => {
      for (let i = 0; i < 25; i++) {
        const id = `emp_rc${w}_${i}`;
        await t.core.db.query(sql`INSERT INTO employees (id, company_id, display_name, email) VALUES (${id}, ${acme}, ${`RC ${w} ${i}`}, ${`rc${w}.${i}@acme.example`})`);
        await t.core.db.query(sql`INSERT INTO teams (id, company_id, name) VALUES (${`team_rc${w}_${i}`}, ${i % 2 ? acme : globex}, ${`RC team ${w} ${i}`})`);
        if (i % 3 === 0) await t.core.db.query(sql`DELETE FROM employees WHERE id = ${id}`);
        if (i % 5 === 0) await t.core.db.query(sql`UPDATE teams SET company_id = ${globex} WHERE id = ${`team_rc${w}_${i}`}`);
        // A transaction that fails after writing leaves the counters as they were.
        await t.core.db
          .transaction(async (tx) => {
            await tx.query(sql`INSERT INTO employees (id, company_id, display_name, email) VALUES (${`emp_rb${w}_${i}`}, ${acme}, 'Rolled back', ${`rb${w}.${i}@acme.example`})`);
            throw new Error('rolled back');
          })
          .catch(() => undefined);
      }
      // One statement, many rows: deletes this writer's remaining even-numbered employees.
      await t.core.db.query(sql`DELETE FROM employees WHERE id LIKE ${`emp\\_rc${w}\\_%`} AND (substring(id from '[0-9]+$'))::int % 2 = 0`);
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(writer));
    await countersMatchRows();
  });

  it.each(RELATIONS)('%s: the list total of a whole company is its row count', async (relation) => {
    const { acme } = t.demo.companies;
    const response = await t.app.inject({
      method: 'GET',
      url: `/v4/${LISTS[relation]}?companyId=${acme}&limit=1`,
      headers: { 'x-api-key': t.demo.apiKeys.admin },
    });
    expect(response.statusCode, response.body).toBe(200);
    const [row] = await t.core.db.query<{ n: number }>(
      sql`SELECT count(*) AS n FROM ${raw(relation)} WHERE company_id = ${acme}`,
    );
    expect(response.json().data.totalCount).toBe(row!.n);
    // The total is the counters' (not a count of the rows): an offset put in them shows, then goes.
    await t.core.db.query(sql`INSERT INTO row_counts (relation, company_id, slot, n) VALUES (${relation}, ${acme}, 99, 1000)`);
    const offset = await t.app.inject({ method: 'GET', url: `/v4/${LISTS[relation]}?companyId=${acme}&limit=1`, headers: { 'x-api-key': t.demo.apiKeys.admin } });
    await t.core.db.query(sql`DELETE FROM row_counts WHERE slot = 99`);
    expect(offset.json().data.totalCount).toBe(row!.n + 1000);
  });
});
