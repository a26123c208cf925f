import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { raw, Sql, sql } from '../../src/store/sql.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * A page of every row of one company is planned once per connection (Sql planning 'generic'): its
 * one best plan reads the list's index on (company_id, sort column, id) and stops at the page's end,
 * whatever the company. Left to PostgreSQL, the plan would be made anew on every call at a million
 * rows (bench/results/scale.md). On a generated set, each such list's page runs from a generic plan
 * only, and that plan reads the index the list names, with no sort of the company's rows.
 */

// As many companies as bench/scale.ts: the planner's guess for one company's rows is then as small as there.
const COMPANIES = 300;
const PER_COMPANY = 20;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** The nodes that produce the page's rows: the plan without its subplans (a row's product ids, say). */
const pathOf = (node: PlanNode): PlanNode[] => [
  node,
  ...(node.Plans ?? []).filter((child) => !['SubPlan', 'InitPlan'].includes(child['Parent Relationship'] ?? '')).flatMap(pathOf),
];

describe.skipIf(!inject('postgresUrl'))('pages planned once [postgres]', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp('postgres');
    const acme = t.demo.companies.acme;
    // Acme holds a third of every table, as in bench/scale.ts; the other companies share the rest.
    const company = sql`CASE WHEN g % 3 = 0 THEN ${acme} ELSE 'co_plan' || (g % ${COMPANIES}) END`;
    const rows = COMPANIES * PER_COMPANY;
    await t.core.db.query(sql`INSERT INTO companies (id, name) SELECT 'co_plan' || g, 'Plan Company ' || g FROM generate_series(0, ${COMPANIES - 1}::int) g`);
    await t.core.db.query(sql`
      INSERT INTO employees (id, company_id, display_name, email, country)
      SELECT 'emp_plan' || lpad(g::text, 6, '0'), ${company}, 'Plan Person ' || g, 'plan' || g || '@plan.example', 'DE'
      FROM generate_series(1, ${rows}::int) g`);
    await t.core.db.query(sql`
      INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
      SELECT 'dev_plan' || lpad(g::text, 6, '0'), ${company}, 'SN-PLAN-' || g, 'Laptops', 'Computers', 'Lenovo', 'ThinkPad T14', 'New', 'Available', 'DE'
      FROM generate_series(1, ${rows}::int) g`);
    await t.core.db.query(sql`
      INSERT INTO orders (id, company_id, order_type, status, employee_id, country, created_at, updated_at)
      SELECT 'ord_plan' || lpad(g::text, 6, '0'), ${company}, 'Deployment', 'Pending', 'emp_plan' || lpad(g::text, 6, '0'), 'DE',
        now() - g * interval '1 minute', now() - g * interval '1 minute'
      FROM generate_series(1, ${rows}::int) g`);
    await t.core.db.exec('ANALYZE');
  });
  afterAll(() => t?.close());

  /** The statements prepared on the connections of one planning whose text includes `from`. */
  const preparedOn = (from: string) =>
    t.core.db.query<{ statement: string; generic: number; custom: number }>(
      new Sql(['SELECT statement, generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE statement LIKE ', ''], [`%FROM ${from}%LIMIT%`], 'generic'),
    );

  /** The generic plan of `statement`, as EXPLAIN shows it for a call with `args` (SQL literals). */
  function genericPlan(statement: string, args: string): Promise<PlanNode> {
    return t.core.db.transaction(async (tx) => {
      await tx.query(sql`SET LOCAL plan_cache_mode = force_generic_plan`);
      await tx.query(raw(`PREPARE page_plan AS ${statement}`));
      const [row] = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(raw(`EXPLAIN (FORMAT JSON) EXECUTE page_plan(${args})`));
      await tx.query(sql`DEALLOCATE page_plan`);
      return row!['QUERY PLAN'][0].Plan;
    });
  }

  it.each([
    { list: '/v4/orders', from: 'orders o', order: 'o.created_at DESC', index: 'orders_company_created_idx', key: 'orders' },
    { list: '/v4/orders?sort=-updatedAt', from: 'orders o', order: 'o.updated_at DESC', index: 'orders_company_updated_idx', key: 'orders' },
    { list: '/v4/employees', from: 'employees e', order: 'e.id ASC', index: 'employees_company_id_idx', key: 'employees' },
    { list: '/v4/inventory', from: 'devices d', order: 'd.id ASC', index: 'devices_company_id_idx', key: 'devices' },
  ])('$list: page 1 and the cursor pages run from a generic plan that reads $index', async ({ list, from, order, index, key }) => {
    const acme = t.demo.companies.acme;
    const get = async (url: string) => {
      const response = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': t.demo.apiKeys.admin } });
      expect(response.statusCode, response.body).toBe(200);
      return response.json().data as Record<string, unknown> & { nextCursor: string | null };
    };
    const first = `${list}${list.includes('?') ? '&' : '?'}companyId=${acme}&limit=25`;
    let cursor: string | null = null;
    for (let page = 0; page < 8; page++) {
      const data = await get(cursor ? `${first}&cursor=${cursor}` : first);
      expect((data[key] as unknown[]).length).toBe(25);
      cursor = page % 2 === 0 ? data.nextCursor : null;
    }
    const pages = (await preparedOn(from)).filter((p) => p.statement.includes(`ORDER BY ${order}`));
    // Page 1 and the cursor page each earn a name after their first runs; neither was ever planned with its values.
    expect(pages.length).toBeGreaterThanOrEqual(2);
    for (const page of pages) {
      expect(page.custom).toBe(0);
      expect(page.generic).toBeGreaterThan(0);
    }
    const pageOne = pages.find((p) => p.statement.includes('LIMIT $2 OFFSET $3'))!;
    const path = pathOf(await genericPlan(pageOne.statement, `'${acme}', 26, 0`));
    expect(path.map((node) => node['Index Name'])).toContain(index);
    expect(path.map((node) => node['Node Type'])).not.toContain('Sort');
  });
});
