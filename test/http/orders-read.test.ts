import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ORDER_TYPES, ORDER_STATES } from '../../src/domain/orders/model.js';
import { encodeCursor } from '../../src/store/paging.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { insertOrder } from '../helpers/orders.js';

interface Summary {
  id: string;
  orderType: string;
  status: string;
  employeeId: string | null;
  employeeName: string | null;
  productIds: string[];
  parentId: string | null;
  createdAt: string;
  updatedAt: string;
}

const idsOf = (rows: Summary[]) => rows.map((r) => r.id).sort();

describe.each(backends())('list_orders and get_order [%s]', (backend) => {
  let t: TestApp;
  let admin: ReturnType<typeof client>;
  const orders = {} as Record<'dana' | 'eve' | 'hans' | 'greta' | 'purchaseUs' | 'purchaseDe' | 'accessory', string>;

  const serialOf = async (deviceId: string) =>
    (await t.core.db.query<{ serial: string }>(sql`SELECT serial_number AS serial FROM devices WHERE id = ${deviceId}`))[0]!.serial;

  const place = async (body: Record<string, unknown>, path = '/v4/orders') => {
    const res = await admin.post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.id as string;
  };

  beforeAll(async () => {
    t = await startTestApp(backend);
    admin = client(t.app, t.demo.apiKeys.admin);
    const { employees, devices, companies } = t.demo;
    const [laptop] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'MacBook Pro 14 M3 Pro'`);
    orders.dana = await place({ orderType: 'Deployment', employeeId: employees.dana, productIds: [devices.stockLaptopDe1] });
    orders.eve = await place({ orderType: 'Collection', employeeId: employees.eve, productIds: [devices.evePhone] });
    orders.hans = await place({ orderType: 'Offboarding', employeeId: employees.hans, productIds: [devices.hansDesktop] });
    orders.greta = await place({ orderType: 'Deployment', employeeId: employees.greta, productIds: [devices.globexStockLaptop] });
    const purchase = (country: string) => ({
      orderType: 'Purchase for Inventory',
      companyId: companies.acme,
      items: [{ itemId: laptop!.id, quantity: 1, country }],
    });
    orders.purchaseUs = await place(purchase('US'), '/v4/orders/purchase');
    orders.purchaseDe = await place(purchase('DE'), '/v4/orders/purchase');
    const withAccessory = await admin.post(`/v4/orders/${orders.dana}/accessories`, { productId: devices.stockLaptopDe1 });
    expect(withAccessory.status).toBe(201);
    orders.accessory = withAccessory.body.data.subOrders[0].id;
    const shipped = await admin.post(`/v4/orders/${orders.hans}/events`, { type: 'status', status: 'In Progress' });
    expect(shipped.status).toBe(200);
  });
  afterAll(() => t.close());

  it('lists every visible order, sub-orders included, as summaries under data.orders', async () => {
    const res = await admin.get('/v4/orders');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ page: 1, pageSize: 20, totalCount: 7, nextCursor: null });
    expect(idsOf(res.body.data.orders)).toEqual(Object.values(orders).sort());
    const dana = res.body.data.orders.find((o: Summary) => o.id === orders.dana);
    expect(dana).toEqual({
      id: orders.dana,
      companyId: t.demo.companies.acme,
      orderType: 'Deployment',
      status: 'Pending',
      employeeId: t.demo.employees.dana,
      employeeName: 'Dana Developer',
      productIds: [t.demo.devices.stockLaptopDe1],
      country: 'DE',
      parentId: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const accessory = res.body.data.orders.find((o: Summary) => o.id === orders.accessory);
    expect(accessory).toMatchObject({ orderType: 'Accessory', parentId: orders.dana });
  });

  it('hides sub-orders with topLevel=true', async () => {
    const res = await admin.get('/v4/orders?topLevel=true');
    expect(res.body.data.totalCount).toBe(6);
    expect(res.body.data.orders.map((o: Summary) => o.id)).not.toContain(orders.accessory);
    expect((await admin.get('/v4/orders?topLevel=false')).body.data.totalCount).toBe(7);
    const bad = await admin.get('/v4/orders?topLevel=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('topLevel');
  });

  it('filters by status in any case, and names the states on a bad one', async () => {
    for (const status of ['in progress', 'IN PROGRESS', 'In Progress']) {
      const res = await admin.get(`/v4/orders?status=${encodeURIComponent(status)}`);
      expect(res.status).toBe(200);
      expect(idsOf(res.body.data.orders)).toEqual([orders.hans]);
    }
    expect((await admin.get('/v4/orders?status=shipped')).body.data.totalCount).toBe(0);
    const bad = await admin.get('/v4/orders?status=lost');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    expect(bad.body.error.details[0].field).toBe('status');
    for (const state of ORDER_STATES) expect(bad.body.error.details[0].message).toContain(state);
  });

  it('filters by order type, case-insensitively, and refuses an unknown type', async () => {
    const deployments = await admin.get('/v4/orders?orderType=deployment');
    expect(idsOf(deployments.body.data.orders)).toEqual([orders.dana, orders.greta].sort());
    const purchases = await admin.get(`/v4/orders?orderType=${encodeURIComponent('Purchase for Inventory')}`);
    expect(idsOf(purchases.body.data.orders)).toEqual([orders.purchaseUs, orders.purchaseDe].sort());
    expect(idsOf((await admin.get('/v4/orders?orderType=Accessory')).body.data.orders)).toEqual([orders.accessory]);
    const bad = await admin.get('/v4/orders?orderType=Rental');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toMatchObject({ field: 'orderType' });
    expect(bad.body.error.details[0].message).toContain(ALL_ORDER_TYPES.join(', '));
  });

  it('searches free text: employee name or email, order id, device serial number', async () => {
    const search = async (query: string) => idsOf((await admin.get(`/v4/orders?query=${encodeURIComponent(query)}`)).body.data.orders);
    expect(await search('dana dev')).toEqual([orders.dana, orders.accessory].sort());
    expect(await search('HANS@ACME')).toEqual([orders.hans]);
    expect(await search(orders.eve.slice(-12))).toEqual([orders.eve]);
    expect(await search(await serialOf(t.demo.devices.hansDesktop!))).toEqual([orders.hans]);
    // The accessory sub-order serves the same device as its parent.
    expect(await search(await serialOf(t.demo.devices.stockLaptopDe1!))).toEqual([orders.dana, orders.accessory].sort());
    expect(await search('100%')).toEqual([]);
  });

  it('pages a search by cursor and by offset, with its total on every page, an empty one too', async () => {
    const first = await admin.get('/v4/orders?query=dana%20dev&limit=1');
    expect(first.body.data).toMatchObject({ page: 1, totalCount: 2 });
    expect(first.body.data.orders).toHaveLength(1);
    const second = await admin.get(`/v4/orders?query=dana%20dev&limit=1&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data).toMatchObject({ page: 2, totalCount: 2, nextCursor: null });
    expect(idsOf([...first.body.data.orders, ...second.body.data.orders])).toEqual([orders.dana, orders.accessory].sort());
    expect((await admin.get('/v4/orders?query=dana%20dev&limit=1&page=2')).body.data.orders).toEqual(second.body.data.orders);
    expect((await admin.get('/v4/orders?query=dana%20dev&limit=1&page=3')).body.data).toMatchObject({ orders: [], totalCount: 2, nextCursor: null });
    // No id can hold "uuu": u is not in their alphabet (Crockford base32); "zzz" once matched a random order id.
    expect((await admin.get('/v4/orders?query=uuu')).body.data).toMatchObject({ orders: [], totalCount: 0 });
    // Oldest first: the page follows the sort, not the order the matches were found in.
    const newest = (await admin.get('/v4/orders?query=dana%20dev')).body.data.orders.map((o: Summary) => o.id);
    const oldest = (await admin.get('/v4/orders?query=dana%20dev&sort=createdAt')).body.data.orders.map((o: Summary) => o.id);
    expect(oldest).toEqual([...newest].reverse());
    expect(newest).toEqual([first.body.data.orders[0].id, second.body.data.orders[0].id]);
  });

  it('filters by employee and by company, and combines filters', async () => {
    const dana = await admin.get(`/v4/orders?employeeId=${t.demo.employees.dana}`);
    expect(idsOf(dana.body.data.orders)).toEqual([orders.dana, orders.accessory].sort());
    const topLevelDana = await admin.get(`/v4/orders?employeeId=${t.demo.employees.dana}&topLevel=true`);
    expect(idsOf(topLevelDana.body.data.orders)).toEqual([orders.dana]);
    const globex = await admin.get(`/v4/orders?companyId=${t.demo.companies.globex}`);
    expect(idsOf(globex.body.data.orders)).toEqual([orders.greta]);
  });

  it('scopes a manager to the orders of their teams and regions, in lists and reads alike', async () => {
    const manager = client(t.app, t.demo.apiKeys.manager);
    const list = await manager.get('/v4/orders');
    expect(idsOf(list.body.data.orders)).toEqual([orders.dana, orders.accessory, orders.hans, orders.purchaseDe].sort());
    expect((await manager.get(`/v4/orders/${orders.dana}`)).status).toBe(200);
    for (const hidden of [orders.eve, orders.purchaseUs, orders.greta]) {
      const res = await manager.get(`/v4/orders/${hidden}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect((await manager.get(`/v4/orders/${hidden}/history`)).status).toBe(404);
    }
    expect((await manager.get(`/v4/orders?query=eve%40acme`)).body.data.totalCount).toBe(0);
  });

  it('shows an employee only their own orders', async () => {
    const eve = client(t.app, t.demo.apiKeys.employee);
    const list = await eve.get('/v4/orders');
    expect(idsOf(list.body.data.orders)).toEqual([orders.eve]);
    expect((await eve.get(`/v4/orders/${orders.eve}`)).status).toBe(200);
    expect((await eve.get(`/v4/orders/${orders.dana}`)).status).toBe(404);
  });

  it('denies a key without mcp:orders:read on list, get and history', async () => {
    const writeOnly = client(t.app, await keyWith(t, 'admin', ['mcp:orders:write']));
    for (const url of ['/v4/orders', `/v4/orders/${orders.dana}`, `/v4/orders/${orders.dana}/history`]) {
      const res = await writeOnly.get(url);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:orders:read' } });
    }
  });

  it('reads one order with its hierarchy: parent, sub-orders, device requests', async () => {
    const parent = await admin.get(`/v4/orders/${orders.dana}`);
    expect(parent.status).toBe(200);
    expect(parent.body.data).toMatchObject({
      id: orders.dana,
      orderType: 'Deployment',
      status: 'Pending',
      parentId: null,
      parent: null,
      employee: { id: t.demo.employees.dana, displayName: 'Dana Developer', email: 'dana@acme.example' },
      productIds: [t.demo.devices.stockLaptopDe1],
      deviceRequests: [{ productId: t.demo.devices.stockLaptopDe1, role: 'deliver', status: 'requested' }],
      subOrders: [{ id: orders.accessory, orderType: 'Accessory', status: 'Pending' }],
    });
    const child = await admin.get(`/v4/orders/${orders.accessory}`);
    expect(child.body.data).toMatchObject({
      parentId: orders.dana,
      parent: { id: orders.dana, orderType: 'Deployment', status: 'Pending' },
      subOrders: [],
    });
  });

  it('answers 404 for an unknown order and 400 for unknown query fields', async () => {
    expect((await admin.get('/v4/orders/ord_nope')).status).toBe(404);
    const res = await admin.get('/v4/orders?colour=red');
    expect(res.status).toBe(400);
    expect(res.body.error.details[0]).toMatchObject({ field: 'colour', rule: 'unknown_field' });
  });
});

describe.each(backends())('list_orders sorting and keyset paging [%s]', (backend) => {
  let t: TestApp;
  let admin: ReturnType<typeof client>;
  const TOTAL = 23;
  const BASE = Date.parse('2030-01-01T00:00:00.000Z');
  const TYPES = ['Deployment', 'Offboarding', 'Collection', 'Maintenance', 'Swap from Inventory'] as const;

  beforeAll(async () => {
    t = await startTestApp(backend);
    admin = client(t.app, t.demo.apiKeys.admin);
    // Timestamps repeat in threes and statuses and types repeat, so every sort has ties to break on id.
    for (let i = 0; i < TOTAL; i++) {
      const id = await insertOrder(t, {
        orderType: TYPES[i % TYPES.length]!,
        status: ORDER_STATES[i % ORDER_STATES.length]!,
        employeeId: t.demo.employees.dana,
        country: 'DE',
        createdAt: new Date(BASE + Math.floor(i / 3) * 60_000),
      });
      const updatedAt = new Date(BASE + ((i * 7) % 5) * 3_600_000);
      await t.core.db.query(sql`UPDATE orders SET updated_at = ${updatedAt} WHERE id = ${id}`);
    }
  });
  afterAll(() => t.close());

  /** Walks every page by cursor, checking each page's envelope. */
  async function walk(query: string, limit: number, total = TOTAL): Promise<Summary[]> {
    const rows: Summary[] = [];
    let url = `/v4/orders?limit=${limit}&${query}`;
    for (let page = 1; ; page++) {
      const res = await admin.get(url);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ page, pageSize: limit, totalCount: total });
      rows.push(...res.body.data.orders);
      if (!res.body.data.nextCursor) return rows;
      url = `/v4/orders?limit=${limit}&${query}&cursor=${res.body.data.nextCursor}`;
    }
  }

  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

  it.each([
    ['createdAt', false],
    ['createdAt', true],
    ['updatedAt', false],
    ['updatedAt', true],
    ['status', false],
    ['status', true],
    ['orderType', false],
    ['orderType', true],
  ] as const)('sorts by %s (descending: %s) with stable cursor pages: no duplicates, no gaps', async (field, descending) => {
    const sort = `sort=${descending ? '-' : ''}${field}`;
    const rows = await walk(sort, 4);
    expect(rows).toHaveLength(TOTAL);
    expect(new Set(rows.map((r) => r.id)).size).toBe(TOTAL);
    const sign = descending ? -1 : 1;
    for (let i = 1; i < rows.length; i++) {
      const [prev, next] = [rows[i - 1]!, rows[i]!];
      const order = compare(prev[field], next[field]) || compare(prev.id, next.id);
      expect(sign * order, `${prev[field]}/${prev.id} before ${next[field]}/${next.id}`).toBeLessThan(0);
    }
    // Page numbers give the same pages as the cursor.
    const byNumber: Summary[] = [];
    for (let page = 1; page <= Math.ceil(TOTAL / 4); page++) {
      byNumber.push(...(await admin.get(`/v4/orders?limit=4&page=${page}&${sort}`)).body.data.orders);
    }
    expect(byNumber.map((r) => r.id)).toEqual(rows.map((r) => r.id));
  });

  // A search counts and cuts its pages from what matched, not from the table: the same rows, in the
  // same order and on the same pages, as the filter that selects exactly those orders.
  it.each(['-createdAt', 'updatedAt', '-status', 'orderType'])('pages a search sorted by %s as it pages the same orders filtered', async (sort) => {
    const dana = t.demo.employees.dana!;
    const total = (await admin.get(`/v4/orders?employeeId=${dana}&limit=1`)).body.data.totalCount as number;
    expect(total).toBeGreaterThanOrEqual(TOTAL);
    const filtered = await walk(`employeeId=${dana}&sort=${sort}`, 7, total);
    const searched = await walk(`query=dana%20developer&sort=${sort}`, 7, total);
    expect(searched.map((r) => r.id)).toEqual(filtered.map((r) => r.id));
    const third = (await admin.get(`/v4/orders?query=dana%20developer&sort=${sort}&limit=7&page=3`)).body.data.orders as Summary[];
    expect(third.map((r) => r.id)).toEqual(filtered.slice(14, 21).map((r) => r.id));
  });

  it('sorts newest first by default, ties broken by id', async () => {
    const rows = await walk('', 5);
    const expected = [...rows].sort((a, b) => compare(b.createdAt, a.createdAt) || compare(b.id, a.id));
    expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  });

  it('keeps filters while paging by cursor', async () => {
    const pending = Math.ceil(TOTAL / ORDER_STATES.length);
    const rows = await walk('status=pending&sort=updatedAt', 1, pending);
    expect(rows).toHaveLength(pending);
    expect(rows.every((r) => r.status === 'Pending')).toBe(true);
  });

  it('truncates limit above 50', async () => {
    const res = await admin.get('/v4/orders?limit=500');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ pageSize: 50, totalCount: TOTAL });
    expect(res.body.data.orders).toHaveLength(TOTAL);
  });

  it('refuses a sort field outside the allowlist', async () => {
    for (const sort of ['employeeName', '--createdAt', 'createdAt,id', 'id']) {
      const res = await admin.get(`/v4/orders?sort=${encodeURIComponent(sort)}`);
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].field).toBe('sort');
      expect(res.body.error.details[0].message).toContain('createdAt, updatedAt, status, orderType');
    }
  });

  it('refuses a cursor issued for another sort, or carrying a forged sort value', async () => {
    const first = await admin.get('/v4/orders?limit=2&sort=status');
    const other = await admin.get(`/v4/orders?limit=2&sort=-status&cursor=${first.body.data.nextCursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('invalid_cursor');
    const issued = (await admin.get('/v4/orders?limit=2')).body.data.nextCursor as string;
    const state = JSON.parse(Buffer.from(issued, 'base64url').toString('utf8'));
    const resend = (value: unknown) => admin.get(`/v4/orders?limit=2&cursor=${encodeCursor({ ...state, value })}`);
    expect((await resend(state.value)).status).toBe(200);
    for (const value of ['yesterday', '2030-02-30T00:00:00.000Z', 42, null]) {
      const res = await resend(value);
      expect(res.status, String(value)).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
  });
});
