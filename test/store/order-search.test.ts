import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * An order search means a case-insensitive substring of the employee's name or email, the order id or a
 * device's serial number, within the caller's companies. On a generated set, every page of the API's
 * search (walked by cursor) holds exactly the generated orders a substring test in JavaScript finds,
 * and the total counts every order walked.
 */

const NAMES = ['Anna Berg', 'Ben Annaberg', 'Zoë Müller_Ops', 'Smith%Lab', "Liam O'Brien", 'Back\\Slash Ng'];
const EMPLOYEES = 30;
const ORDERS = 90;
const QUERIES = ['ann', 'ANNA', 'müller', '_ops', 'smith%', "o'b", 'back\\s', 'srch0001', 'sn-x-00', 'x-001', 'ng', 'zzz'];
const pad = (n: number) => String(n).padStart(4, '0');

describe.each(backends())('order search by trigram index [%s]', (backend) => {
  let t: TestApp;
  let admin: ReturnType<typeof client>;
  const orders: { id: string; company: string; texts: string[] }[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend);
    admin = client(t.app, t.demo.apiKeys.admin);
    const { acme, globex } = t.demo.companies;
    const employees = Array.from({ length: EMPLOYEES }, (_, i) => {
      const name = `${NAMES[i % NAMES.length]} ${i}`;
      return { id: `emp_srch${pad(i)}`, company: i % 5 === 4 ? globex! : acme!, name, email: `p${i}.${name.replace(/[^A-Za-z]/g, '').toLowerCase()}@srch.example` };
    });
    const devices = employees.map((e, i) => ({ id: `dev_srch${pad(i)}`, company: e.company, serial: `SN-X-${pad(i * 7)}` }));
    await t.core.db.query(sql`INSERT INTO employees (id, company_id, display_name, email)
      SELECT * FROM unnest(${employees.map((e) => e.id)}::text[], ${employees.map((e) => e.company)}::text[],
        ${employees.map((e) => e.name)}::text[], ${employees.map((e) => e.email)}::text[])`);
    await t.core.db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, country)
      SELECT id, company, serial, 'Laptops', 'Computers', 'Lenovo', 'T14', 'New', 'Assigned', 'DE'
      FROM unnest(${devices.map((d) => d.id)}::text[], ${devices.map((d) => d.company)}::text[], ${devices.map((d) => d.serial)}::text[]) AS g(id, company, serial)`);
    for (let i = 0; i < ORDERS; i++) {
      const employee = employees[i % EMPLOYEES]!;
      const device = devices[(i * 11) % EMPLOYEES]!;
      // A device of another employee of the same company, so a serial finds an order its employee's name does not.
      const onOrder = device.company === employee.company ? device : devices[i % EMPLOYEES]!;
      orders.push({ id: `ord_srch${pad(i)}`, company: employee.company, texts: [employee.name, employee.email, `ord_srch${pad(i)}`, onOrder.serial] });
    }
    await t.core.db.query(sql`INSERT INTO orders (id, company_id, order_type, status, employee_id, country, created_at, updated_at)
      SELECT id, company, 'Deployment', 'Pending', employee, 'DE', now() - g.n * interval '1 minute', now()
      FROM unnest(${orders.map((o) => o.id)}::text[], ${orders.map((o) => o.company)}::text[],
        ${orders.map((_, i) => employees[i % EMPLOYEES]!.id)}::text[], ${orders.map((_, i) => i)}::int[]) AS g(id, company, employee, n)`);
    await t.core.db.query(sql`INSERT INTO order_devices (order_id, device_id, role, status)
      SELECT order_id, device_id, 'deliver', 'requested' FROM unnest(${orders.map((o) => o.id)}::text[],
        ${orders.map((o) => devices.find((d) => d.serial === o.texts[3])!.id)}::text[]) AS g(order_id, device_id)`);
    await t.core.db.query(sql`ANALYZE`);
  });
  afterAll(() => t?.close());

  it.each(QUERIES)('"%s": every page of the search holds what a substring test finds in the company', async (q) => {
    const acme = t.demo.companies.acme!;
    const expected = orders
      .filter((o) => o.company === acme && o.texts.some((text) => text.toLowerCase().includes(q.toLowerCase())))
      .map((o) => o.id)
      .sort();
    const seen: string[] = [];
    let url = `/v4/orders?companyId=${acme}&limit=7&query=${encodeURIComponent(q)}`;
    let total: number | undefined;
    for (;;) {
      const res = await admin.get(url);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      total ??= res.body.data.totalCount as number;
      expect(res.body.data.totalCount).toBe(total);
      seen.push(...res.body.data.orders.map((o: { id: string }) => o.id));
      if (!res.body.data.nextCursor) break;
      url = `/v4/orders?companyId=${acme}&limit=7&query=${encodeURIComponent(q)}&cursor=${res.body.data.nextCursor}`;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(total);
    expect(seen.filter((id) => id.startsWith('ord_srch')).sort()).toEqual(expected);
  });
});
