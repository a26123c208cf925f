import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/store/ids.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

type Api = ReturnType<typeof client>;
type EmployeeKey = keyof TestApp['demo']['employees'];
interface Violation {
  code: string;
  message: string;
  field?: string;
  productId?: string;
}

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
const PURCHASES = ['Purchase for Employee', 'Purchase for Inventory'];
const createPath = (body: { orderType: string }) => (PURCHASES.includes(body.orderType) ? '/v4/orders/purchase' : '/v4/orders');
/** What makes two violation lists the same rule outcome (messages may quote the clock). */
const outcome = (violations: Violation[]) => violations.map(({ code, field, productId }) => ({ code, field, productId }));

describe.each(backends())('order creation and validation [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  const admin = () => client(t.app, t.demo.apiKeys.admin);
  const manager = () => client(t.app, t.demo.apiKeys.manager);
  const employee = (key: EmployeeKey) => t.demo.employees[key];
  const demoDevice = (key: string) => t.demo.devices[key]!;

  /** A device of its own for each test, so tests do not share holds. */
  async function newDevice(options: { holder?: EmployeeKey; country?: string; type?: string; company?: 'acme' | 'globex' } = {}) {
    const id = newId('dev');
    const serialNumber = `SN-T-${id.slice(-10)}`;
    const holder = options.holder ? employee(options.holder) : null;
    await t.core.db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model,
        condition, status, country, employee_id)
      VALUES (${id}, ${t.demo.companies[options.company ?? 'acme']}, ${serialNumber}, ${options.type ?? 'Laptops'}, 'Computers',
        'Lenovo', 'ThinkPad T14', 'Good', ${holder ? 'Assigned' : 'Available'}, ${options.country ?? 'DE'}, ${holder})`);
    return { id, serialNumber };
  }

  async function catalogItem(name: string): Promise<string> {
    const [row] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = ${name}`);
    return row!.id;
  }

  /** The same body refused by validate (200, valid false) and by creation (422), with the same violations. */
  async function refusedByBoth(body: Record<string, unknown> & { orderType: string }, api: Api = admin()): Promise<Violation[]> {
    const check = await api.post('/v4/orders/validate', body);
    expect(check.status).toBe(200);
    expect(check.body.data).toMatchObject({ valid: false, orderType: body.orderType });
    const created = await api.post(createPath(body), body);
    expect(created.status).toBe(422);
    expect(created.body.error.code).toBe('order_constraints_violated');
    expect(outcome(created.body.error.details)).toEqual(outcome(check.body.data.violations));
    return check.body.data.violations;
  }
  const codes = (violations: Violation[]) => violations.map((v) => v.code).sort();

  /** The same malformed body refused with 400 by validate and by creation; returns the fields named. */
  async function malformedForBoth(body: Record<string, unknown>, api: Api = admin()): Promise<string[]> {
    const fields: string[][] = [];
    for (const path of ['/v4/orders/validate', createPath(body as { orderType: string })]) {
      const res = await api.post(path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      fields.push(res.body.error.details.map((d: { field: string }) => d.field));
    }
    expect(fields[0]).toEqual(fields[1]);
    return fields[0]!;
  }

  async function holdsOf(deviceId: string) {
    return t.core.db.query<{ orderId: string }>(sql`SELECT order_id AS "orderId" FROM device_holds WHERE device_id = ${deviceId}`);
  }

  describe('a valid order of every type', () => {
    it('Deployment: delivers an available device, holds it and records the creation', async () => {
      const laptop = demoDevice('stockLaptopDe1');
      const body = { orderType: 'Deployment', employeeId: employee('dana'), productIds: [laptop] };
      const check = await admin().post('/v4/orders/validate', body);
      expect(check.body.data).toEqual({ valid: true, orderType: 'Deployment', violations: [] });
      const res = await admin().post('/v4/orders', body);
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        orderType: 'Deployment',
        status: 'Pending',
        companyId: t.demo.companies.acme,
        employeeId: employee('dana'),
        employee: { id: employee('dana'), displayName: 'Dana Developer', email: 'dana@acme.example' },
        country: 'DE',
        productIds: [laptop],
        deviceRequests: [{ productId: laptop, productType: 'Laptops', role: 'deliver', status: 'requested' }],
        parent: null,
        subOrders: [],
        closedAt: null,
      });
      expect(res.body.data.id).toMatch(/^ord_/);
      expect(await holdsOf(laptop)).toEqual([{ orderId: res.body.data.id }]);
      const events = await t.core.db.query(sql`SELECT type, status_to AS "statusTo", source FROM order_events WHERE order_id = ${res.body.data.id}`);
      expect(events).toEqual([{ type: 'created', statusTo: 'Pending', source: 'api' }]);
    });

    it('Offboarding: returns assigned devices, with dispositions, a legal hold and a pickup window', async () => {
      const laptop = demoDevice('erikLaptop');
      const pickupWindow = { start: inDays(2), end: inDays(4) };
      const legalHold = { caseId: 'LIT-2024-17', reason: 'Pending litigation', until: '2030-01-31' };
      const res = await admin().post('/v4/orders', {
        orderType: 'Offboarding',
        employeeId: employee('erik'),
        productIds: [laptop],
        dispositions: [{ productId: laptop, action: 'keep' }],
        legalHold,
        pickupWindow,
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        orderType: 'Offboarding',
        country: 'SE',
        deviceRequests: [{ productId: laptop, role: 'return' }],
        dispositions: [{ productId: laptop, action: 'keep' }],
        legalHold,
        pickupWindow,
      });
    });

    it('Collection: accepts a serial number and records the device id', async () => {
      const [desktop] = await t.core.db.query<{ serial: string }>(sql`SELECT serial_number AS serial FROM devices WHERE id = ${demoDevice('hansDesktop')}`);
      const res = await admin().post('/v4/orders', {
        orderType: 'Collection',
        employeeId: employee('hans'),
        productIds: [desktop!.serial],
        dispositions: [{ productId: desktop!.serial, action: 'return_to_stock' }],
      });
      expect(res.status).toBe(201);
      expect(res.body.data.productIds).toEqual([demoDevice('hansDesktop')]);
      expect(res.body.data.deviceRequests[0]).toMatchObject({ role: 'return', serialNumber: desktop!.serial });
      expect(res.body.data.dispositions).toEqual([{ productId: demoDevice('hansDesktop'), action: 'return_to_stock' }]);
    });

    it('Maintenance: services an assigned device', async () => {
      const res = await admin().post('/v4/orders', { orderType: 'Maintenance', employeeId: employee('eve'), productIds: [demoDevice('evePhone')] });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ country: 'US', deviceRequests: [{ productId: demoDevice('evePhone'), role: 'service' }] });
    });

    it('Swap from Inventory: returns the assigned device and delivers the available one', async () => {
      const res = await admin().post('/v4/orders', {
        orderType: 'Swap from Inventory',
        employeeId: employee('eve'),
        productIds: [demoDevice('eveLaptop'), demoDevice('stockLaptopUs1')],
        dispositions: [{ productId: demoDevice('eveLaptop'), action: 'wipe_and_redeploy' }],
      });
      expect(res.status).toBe(201);
      const roles = Object.fromEntries(res.body.data.deviceRequests.map((d: { productId: string; role: string }) => [d.productId, d.role]));
      expect(roles).toEqual({ [demoDevice('eveLaptop')]: 'return', [demoDevice('stockLaptopUs1')]: 'deliver' });
      expect(await holdsOf(demoDevice('stockLaptopUs1'))).toEqual([{ orderId: res.body.data.id }]);
    });

    it('Purchase for Employee: stores the catalog items with name, unit price and currency', async () => {
      const thinkpad = await catalogItem('ThinkPad X1 Carbon Gen 12');
      const body = { orderType: 'Purchase for Employee', employeeId: employee('dana'), items: [{ itemId: thinkpad, quantity: 2, country: 'de' }] };
      expect((await admin().post('/v4/orders/validate', body)).body.data).toEqual({ valid: true, orderType: 'Purchase for Employee', violations: [] });
      const res = await admin().post('/v4/orders/purchase', body);
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        orderType: 'Purchase for Employee',
        status: 'Pending',
        employeeId: employee('dana'),
        country: 'DE',
        productIds: [],
        deviceRequests: [],
        items: [{ itemId: thinkpad, name: 'ThinkPad X1 Carbon Gen 12', manufacturer: 'Lenovo', productType: 'Laptops', quantity: 2, country: 'DE', unitPrice: 1899, currency: 'USD', leadTimeDays: 2 }],
      });
    });

    it('Purchase for Inventory: buys into the named company, with no employee', async () => {
      const body = {
        orderType: 'Purchase for Inventory',
        companyId: t.demo.companies.acme,
        items: [
          { itemId: await catalogItem('MX Keys S'), quantity: 10, country: 'US' },
          { itemId: await catalogItem('MX Master 3S'), quantity: 10, country: 'US' },
        ],
      };
      const res = await admin().post('/v4/orders/purchase', body);
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ orderType: 'Purchase for Inventory', employeeId: null, employee: null, country: 'US', companyId: t.demo.companies.acme });
      expect(res.body.data.items.map((i: { name: string }) => i.name)).toEqual(['MX Keys S', 'MX Master 3S']);
    });
  });

  describe('every rule, refused alike by validate and create', () => {
    it('lists every violation at once, not just the first', async () => {
      const violations = await refusedByBoth({
        orderType: 'Deployment',
        employeeId: employee('noah'),
        productIds: [demoDevice('repairLaptop'), 'dev_does_not_exist'],
      });
      expect(violations).toEqual([
        expect.objectContaining({ code: 'employee_has_no_delivery_address', field: 'employeeId' }),
        expect.objectContaining({ code: 'device_not_available', field: 'productIds.0', productId: demoDevice('repairLaptop') }),
        expect.objectContaining({ code: 'device_not_found', field: 'productIds.1', productId: 'dev_does_not_exist' }),
      ]);
      expect(violations.every((v) => v.message.length > 10)).toBe(true);
    });

    it('employee_not_found: unknown, or in a company the caller is not in', async () => {
      const device = await newDevice();
      expect(codes(await refusedByBoth({ orderType: 'Deployment', employeeId: 'emp_unknown', productIds: [device.id] }))).toEqual(['employee_not_found']);
      const globexForManager = await refusedByBoth({ orderType: 'Maintenance', employeeId: employee('greta'), productIds: [demoDevice('gretaLaptop')] }, manager());
      expect(codes(globexForManager)).toEqual(['device_not_found', 'employee_not_found']);
    });

    it('device_not_found: a device of another company than the employee’s', async () => {
      const violations = await refusedByBoth({ orderType: 'Deployment', employeeId: employee('dana'), productIds: [demoDevice('globexStockLaptop')] });
      expect(violations).toEqual([expect.objectContaining({ code: 'device_not_found', productId: demoDevice('globexStockLaptop') })]);
    });

    it('device_not_available: a deployment of an assigned device', async () => {
      const assigned = await newDevice({ holder: 'erik' });
      expect(codes(await refusedByBoth({ orderType: 'Deployment', employeeId: employee('dana'), productIds: [assigned.id] }))).toEqual(['device_not_available']);
    });

    it('employee_has_no_delivery_address: deployments and swaps need one', async () => {
      const stock = await newDevice({ country: 'US' });
      const violations = await refusedByBoth({ orderType: 'Deployment', employeeId: employee('noah'), productIds: [stock.id] });
      expect(violations).toEqual([expect.objectContaining({ code: 'employee_has_no_delivery_address', field: 'employeeId' })]);
    });

    it('device_not_assigned_to_employee and employee_has_no_devices: offboarding and collection', async () => {
      const danas = await newDevice({ holder: 'dana' });
      expect(codes(await refusedByBoth({ orderType: 'Offboarding', employeeId: employee('noah'), productIds: [danas.id] }))).toEqual([
        'device_not_assigned_to_employee',
        'employee_has_no_devices',
      ]);
      const hans = await newDevice({ holder: 'hans' });
      expect(codes(await refusedByBoth({ orderType: 'Collection', employeeId: employee('dana'), productIds: [hans.id] }))).toEqual([
        'device_not_assigned_to_employee',
      ]);
    });

    it('device_not_assigned_to_employee: maintenance of stock', async () => {
      const stock = await newDevice();
      const violations = await refusedByBoth({ orderType: 'Maintenance', employeeId: employee('dana'), productIds: [stock.id] });
      expect(violations).toEqual([expect.objectContaining({ code: 'device_not_assigned_to_employee', productId: stock.id })]);
    });

    it('swap_requires_return_and_replacement: a swap with only one side', async () => {
      const returned = await newDevice({ holder: 'dana' });
      const replacement = await newDevice();
      for (const productIds of [[returned.id], [replacement.id]]) {
        expect(codes(await refusedByBoth({ orderType: 'Swap from Inventory', employeeId: employee('dana'), productIds }))).toEqual([
          'swap_requires_return_and_replacement',
        ]);
      }
    });

    it('device_in_open_order: no device sits in two open orders', async () => {
      const stock = await newDevice();
      const first = await admin().post('/v4/orders', { orderType: 'Deployment', employeeId: employee('dana'), productIds: [stock.id] });
      expect(first.status).toBe(201);
      const violations = await refusedByBoth({ orderType: 'Deployment', employeeId: employee('hans'), productIds: [stock.serialNumber] });
      expect(violations).toEqual([expect.objectContaining({ code: 'device_in_open_order', field: 'productIds.0', productId: stock.id })]);
      expect(violations[0]!.message).toContain(first.body.data.id);
      expect(await holdsOf(stock.id)).toEqual([{ orderId: first.body.data.id }]);
    });

    it('releases nothing half-written when creation is refused', async () => {
      const stock = await newDevice();
      const before = await t.core.db.query<{ n: number }>(sql`SELECT count(*) AS n FROM orders`);
      await refusedByBoth({ orderType: 'Deployment', employeeId: employee('noah'), productIds: [stock.id] });
      expect(await t.core.db.query(sql`SELECT count(*) AS n FROM orders`)).toEqual(before);
      expect(await holdsOf(stock.id)).toEqual([]);
    });

    it('disposition_device_not_in_order: a disposition for a device the order does not return', async () => {
      const returned = await newDevice({ holder: 'dana' });
      const other = await newDevice({ holder: 'dana' });
      const replacement = await newDevice();
      const violations = await refusedByBoth({
        orderType: 'Swap from Inventory',
        employeeId: employee('dana'),
        productIds: [returned.id, replacement.id],
        dispositions: [
          { productId: other.id, action: 'return_to_stock' },
          { productId: replacement.id, action: 'keep' },
        ],
      });
      expect(violations).toEqual([
        expect.objectContaining({ code: 'disposition_device_not_in_order', field: 'dispositions.0.productId', productId: other.id }),
        expect.objectContaining({ code: 'disposition_device_not_in_order', field: 'dispositions.1.productId', productId: replacement.id }),
      ]);
    });

    it('legal_hold_blocks_disposition: wiping and recycling are refused under a legal hold, per device', async () => {
      const a = await newDevice({ holder: 'dana' });
      const b = await newDevice({ holder: 'dana' });
      const c = await newDevice({ holder: 'dana' });
      const violations = await refusedByBoth({
        orderType: 'Offboarding',
        employeeId: employee('dana'),
        productIds: [a.id, b.id, c.id],
        legalHold: { caseId: 'CASE-1', reason: 'Regulator request' },
        dispositions: [
          { productId: a.id, action: 'wipe_and_redeploy' },
          { productId: b.id, action: 'recycle' },
          { productId: c.id, action: 'return_to_stock' },
        ],
      });
      expect(violations).toEqual([
        expect.objectContaining({ code: 'legal_hold_blocks_disposition', field: 'dispositions.0.action', productId: a.id }),
        expect.objectContaining({ code: 'legal_hold_blocks_disposition', field: 'dispositions.1.action', productId: b.id }),
      ]);
    });

    it('pickup_window_not_in_future: the window must start after now', async () => {
      const device = await newDevice({ holder: 'dana' });
      const violations = await refusedByBoth({
        orderType: 'Collection',
        employeeId: employee('dana'),
        productIds: [device.id],
        pickupWindow: { start: inDays(-1), end: inDays(1) },
      });
      expect(violations).toEqual([expect.objectContaining({ code: 'pickup_window_not_in_future', field: 'pickupWindow.start' })]);
    });

    it('purchase rules: unknown item, not sold in the country, not enough stock', async () => {
      const violations = await refusedByBoth({
        orderType: 'Purchase for Inventory',
        companyId: t.demo.companies.acme,
        items: [
          { itemId: 'cat_unknown', quantity: 1, country: 'DE' },
          { itemId: await catalogItem('Latitude 5440'), quantity: 1, country: 'DE' },
          { itemId: await catalogItem('MacBook Pro 14 M3 Pro'), quantity: 13, country: 'DE' },
          { itemId: await catalogItem('MX Keys S'), quantity: 1, country: 'FR' },
        ],
      });
      expect(violations).toEqual([
        expect.objectContaining({ code: 'items_multiple_countries', field: 'items' }),
        expect.objectContaining({ code: 'catalog_item_not_found', field: 'items.0.itemId' }),
        expect.objectContaining({ code: 'insufficient_catalog_stock', field: 'items.1.quantity' }),
        expect.objectContaining({ code: 'insufficient_catalog_stock', field: 'items.2.quantity' }),
        expect.objectContaining({ code: 'catalog_item_unavailable_in_country', field: 'items.3.country' }),
      ]);
    });

    it('purchase for an employee: the employee rules, and items for the employee’s country', async () => {
      const iphone = await catalogItem('iPhone 15');
      const noah = await refusedByBoth({ orderType: 'Purchase for Employee', employeeId: employee('noah'), items: [{ itemId: iphone, quantity: 1, country: 'US' }] });
      expect(codes(noah)).toEqual(['employee_has_no_delivery_address']);
      const dana = await refusedByBoth({ orderType: 'Purchase for Employee', employeeId: employee('dana'), items: [{ itemId: iphone, quantity: 1, country: 'US' }] });
      expect(dana).toEqual([expect.objectContaining({ code: 'items_country_not_employee_country', field: 'items.0.country' })]);
      const unknown = await refusedByBoth({ orderType: 'Purchase for Employee', employeeId: 'emp_unknown', items: [{ itemId: iphone, quantity: 1, country: 'US' }] });
      expect(codes(unknown)).toEqual(['employee_not_found']);
      const eve = await refusedByBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [{ itemId: iphone, quantity: 1, country: 'US' }] }, manager());
      expect(codes(eve)).toEqual(['employee_out_of_scope']);
    });
  });

  describe('structures', () => {
    const deployment = () => ({ orderType: 'Deployment', employeeId: employee('dana'), productIds: [demoDevice('stockLaptopDe2')] });

    it('refuses a bad device list: empty, repeated, too long, or one device named twice', async () => {
      expect(await malformedForBoth({ ...deployment(), productIds: [] })).toEqual(['productIds']);
      expect(await malformedForBoth({ ...deployment(), productIds: ['dev_a', 'dev_b', 'dev_a'] })).toEqual(['productIds.2']);
      expect(await malformedForBoth({ ...deployment(), productIds: Array.from({ length: 51 }, (_, i) => `dev_${i}`) })).toEqual(['productIds']);
      const device = await newDevice();
      const res = await admin().post('/v4/orders', { ...deployment(), productIds: [device.id, device.serialNumber] });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([{ field: 'productIds.1', rule: 'unique', message: 'names the same device as productIds.0' }]);
    });

    it('refuses dispositions and pickup windows on types that return nothing', async () => {
      const res = await admin().post('/v4/orders', {
        ...deployment(),
        dispositions: [{ productId: demoDevice('stockLaptopDe2'), action: 'keep' }],
        pickupWindow: { start: inDays(1), end: inDays(2) },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([
        expect.objectContaining({ field: 'dispositions', rule: 'allowed_for_type' }),
        expect.objectContaining({ field: 'pickupWindow', rule: 'allowed_for_type' }),
      ]);
    });

    it('names each bad field of a disposition, legal hold and pickup window', async () => {
      const base = { orderType: 'Offboarding', employeeId: employee('dana'), productIds: [demoDevice('danaLaptop')] };
      expect(await malformedForBoth({ ...base, dispositions: [{ productId: demoDevice('danaLaptop'), action: 'shred' }] })).toEqual(['dispositions.0.action']);
      expect(
        await malformedForBoth({
          ...base,
          dispositions: [
            { productId: demoDevice('danaLaptop'), action: 'keep' },
            { productId: demoDevice('danaLaptop'), action: 'recycle' },
          ],
        }),
      ).toEqual(['dispositions.1.productId']);
      expect(await malformedForBoth({ ...base, legalHold: { reason: 'x', until: 'next week' } })).toEqual(['legalHold.caseId', 'legalHold.until']);
      expect(await malformedForBoth({ ...base, pickupWindow: { start: inDays(3), end: inDays(2) } })).toEqual(['pickupWindow.end']);
      expect(await malformedForBoth({ ...base, pickupWindow: { start: inDays(1), end: inDays(16) } })).toEqual(['pickupWindow.end']);
      expect(await malformedForBoth({ ...base, pickupWindow: { start: 'tomorrow', end: inDays(2) } })).toEqual(['pickupWindow.start']);
    });

    it('refuses unknown fields and order types', async () => {
      expect(await malformedForBoth({ ...deployment(), priority: 'high' })).toEqual(['priority']);
      const validate = await admin().post('/v4/orders/validate', { ...deployment(), orderType: 'Teleport' });
      expect(validate.status).toBe(400);
      expect(validate.body.error.details[0].field).toBe('orderType');
      const create = await admin().post('/v4/orders', { ...deployment(), orderType: 'Purchase for Employee' });
      expect(create.status).toBe(400);
      expect(create.body.error.details[0].field).toBe('orderType');
    });

    it('refuses bad purchase bodies: employeeId by type, quantities, item counts, repeated items', async () => {
      const item = { itemId: await catalogItem('iPhone 15'), quantity: 1, country: 'US' };
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', items: [item] })).toEqual(['employeeId']);
      expect(await malformedForBoth({ orderType: 'Purchase for Inventory', employeeId: employee('eve'), items: [item] })).toEqual(['employeeId']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), companyId: t.demo.companies.acme, items: [item] })).toEqual(['companyId']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [{ ...item, quantity: 0 }] })).toEqual(['items.0.quantity']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [{ ...item, quantity: 101 }] })).toEqual(['items.0.quantity']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [] })).toEqual(['items']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: Array.from({ length: 21 }, (_, i) => ({ ...item, itemId: `cat_${i}` })) })).toEqual(['items']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [item, item] })).toEqual(['items.1.itemId']);
      expect(await malformedForBoth({ orderType: 'Purchase for Employee', employeeId: employee('eve'), items: [{ ...item, country: 'USA' }] })).toEqual(['items.0.country']);
    });

    it('requires an admin of several companies to name the company of an inventory purchase', async () => {
      const res = await admin().post('/v4/orders/purchase', { orderType: 'Purchase for Inventory', items: [{ itemId: await catalogItem('iPhone 15'), quantity: 1, country: 'US' }] });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'company_required', details: [expect.objectContaining({ field: 'companyId' })] });
    });
  });

  describe('manager scope', () => {
    it('orders for Dana, Erik and Hans, from stock in the region', async () => {
      const forDana = await newDevice();
      const forErik = await newDevice();
      const hansOwn = await newDevice({ holder: 'hans' });
      const placed = [
        await manager().post('/v4/orders', { orderType: 'Deployment', employeeId: employee('dana'), productIds: [forDana.id] }),
        await manager().post('/v4/orders', { orderType: 'Deployment', employeeId: employee('erik'), productIds: [forErik.id] }),
        await manager().post('/v4/orders', { orderType: 'Collection', employeeId: employee('hans'), productIds: [hansOwn.id] }),
      ];
      expect(placed.map((r) => r.status)).toEqual([201, 201, 201]);
      expect(placed.map((r) => r.body.data.employeeId)).toEqual([employee('dana'), employee('erik'), employee('hans')]);
    });

    it('refuses Eve with employee_out_of_scope, and stock outside the region as not found', async () => {
      const stockDe = await newDevice();
      const eve = await refusedByBoth({ orderType: 'Deployment', employeeId: employee('eve'), productIds: [stockDe.id] }, manager());
      expect(eve).toEqual([expect.objectContaining({ code: 'employee_out_of_scope', field: 'employeeId' })]);
      const stockUs = await newDevice({ country: 'US' });
      const us = await refusedByBoth({ orderType: 'Deployment', employeeId: employee('dana'), productIds: [stockUs.id] }, manager());
      expect(us).toEqual([expect.objectContaining({ code: 'device_not_found', productId: stockUs.id })]);
    });

    it('buys into inventory only in the manager’s regions', async () => {
      const item = await catalogItem('iPhone 15');
      const de = await manager().post('/v4/orders/purchase', { orderType: 'Purchase for Inventory', items: [{ itemId: item, quantity: 3, country: 'DE' }] });
      expect(de.status).toBe(201);
      expect(de.body.data).toMatchObject({ companyId: t.demo.companies.acme, country: 'DE' });
      const us = await refusedByBoth({ orderType: 'Purchase for Inventory', items: [{ itemId: item, quantity: 3, country: 'US' }] }, manager());
      expect(codes(us)).toEqual(['country_out_of_scope']);
    });

    it('lets employee Eve validate an order for herself, and nobody else', async () => {
      const api = client(t.app, t.demo.apiKeys.employee);
      const own = await newDevice({ holder: 'eve', country: 'US' });
      const mine = await api.post('/v4/orders/validate', { orderType: 'Maintenance', employeeId: employee('eve'), productIds: [own.id] });
      expect(mine.body.data).toEqual({ valid: true, orderType: 'Maintenance', violations: [] });
      const other = await api.post('/v4/orders/validate', { orderType: 'Maintenance', employeeId: employee('dana'), productIds: [demoDevice('danaLaptop')] });
      expect(codes(other.body.data.violations)).toEqual(['device_not_found', 'employee_out_of_scope']);
      const create = await api.post('/v4/orders', { orderType: 'Maintenance', employeeId: employee('eve'), productIds: [own.id] });
      expect(create.status).toBe(403);
    });
  });

  describe('capabilities', () => {
    it('needs mcp:orders:write to create and mcp:orders:read to validate', async () => {
      const readOnly = client(t.app, await keyWith(t, 'admin', ['mcp:orders:read']));
      const device = await newDevice();
      const body = { orderType: 'Deployment', employeeId: employee('dana'), productIds: [device.id] };
      for (const [path, payload] of [
        ['/v4/orders', body],
        ['/v4/orders/purchase', { orderType: 'Purchase for Inventory', items: [] }],
        ['/v4/orders/ord_x/accessories', { productId: device.id }],
      ] as const) {
        const res = await readOnly.post(path, payload);
        expect(res.status, path).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:orders:write' } });
      }
      expect((await readOnly.post('/v4/orders/validate', body)).body.data.valid).toBe(true);
      const writeOnly = client(t.app, await keyWith(t, 'admin', ['mcp:orders:write']));
      const validate = await writeOnly.post('/v4/orders/validate', body);
      expect(validate.status).toBe(403);
      expect(validate.body.error.details).toEqual({ required: 'mcp:orders:read' });
    });

    it('returns the created order to a key that can create but not read, and refuses it the read', async () => {
      const writeOnly = client(t.app, await keyWith(t, 'admin', ['mcp:orders:write']));
      const device = await newDevice();
      const res = await writeOnly.post('/v4/orders', { orderType: 'Deployment', employeeId: employee('hans'), productIds: [device.id] });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ employeeId: employee('hans'), status: 'Pending', deviceRequests: [{ productId: device.id, role: 'deliver' }] });
      const read = await writeOnly.get(`/v4/orders/${res.body.data.id}`);
      expect(read.status).toBe(403);
      expect(read.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:orders:read' } });
    });
  });

  describe('add_power_accessory', () => {
    async function deploymentOf(...devices: string[]) {
      const res = await admin().post('/v4/orders', { orderType: 'Deployment', employeeId: employee('dana'), productIds: devices });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    }

    it('creates a charger sub-order for a device on the order, once while it is open', async () => {
      const laptop = await newDevice();
      const tablet = await newDevice({ type: 'Tablet' });
      const orderId = await deploymentOf(laptop.id, tablet.id);
      const res = await admin().post(`/v4/orders/${orderId}/accessories`, { productId: laptop.id });
      expect(res.status).toBe(201);
      expect(res.body.data.id).toBe(orderId);
      expect(res.body.data.subOrders).toEqual([
        { id: expect.stringMatching(/^ord_/), orderType: 'Accessory', status: 'Pending', productIds: [laptop.id], createdAt: expect.any(String) },
      ]);
      const subOrderId = res.body.data.subOrders[0].id;
      const [sub] = await t.core.db.query(sql`SELECT parent_id AS "parentId", employee_id AS "employeeId", country, company_id AS "companyId"
        FROM orders WHERE id = ${subOrderId}`);
      expect(sub).toEqual({ parentId: orderId, employeeId: employee('dana'), country: 'DE', companyId: t.demo.companies.acme });
      const [request] = await t.core.db.query(sql`SELECT role, status FROM order_devices WHERE order_id = ${subOrderId}`);
      expect(request).toEqual({ role: 'service', status: 'requested' });
      expect(await holdsOf(laptop.id)).toEqual([{ orderId }]);
      const events = await t.core.db.query(sql`SELECT type, device_id AS "deviceId", data FROM order_events WHERE order_id = ${orderId} ORDER BY type`);
      expect(events).toEqual([
        { type: 'accessory_requested', deviceId: laptop.id, data: { subOrderId } },
        { type: 'created', deviceId: null, data: {} },
      ]);

      const again = await admin().post(`/v4/orders/${orderId}/accessories`, { serialNumber: laptop.serialNumber });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('accessory_already_requested');
      const bySerial = await admin().post(`/v4/orders/${orderId}/accessories`, { serialNumber: tablet.serialNumber });
      expect(bySerial.status).toBe(201);
      expect(bySerial.body.data.subOrders).toHaveLength(2);
    });

    it('refuses a device that is not on the order', async () => {
      const orderId = await deploymentOf((await newDevice()).id);
      const other = await newDevice();
      const res = await admin().post(`/v4/orders/${orderId}/accessories`, { productId: other.id });
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'device_not_on_order', details: [expect.objectContaining({ field: 'productId' })] });
    });

    it('refuses a charger SKU or a charger with a message that asks for the device', async () => {
      const charger = await newDevice({ type: 'Chargers' });
      const orderId = await deploymentOf((await newDevice()).id, charger.id);
      const chargerSku = await catalogItem('USB-C 96W Power Adapter');
      for (const body of [{ productId: chargerSku }, { serialNumber: chargerSku }, { productId: 'cat_charger_96w' }, { productId: charger.id }, { productId: demoDevice('stockCharger') }]) {
        const res = await admin().post(`/v4/orders/${orderId}/accessories`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.code).toBe('expected_device_not_sku');
        expect(res.body.error.message).toMatch(/device that needs/);
      }
    });

    it('refuses a closed order', async () => {
      const laptop = await newDevice();
      const orderId = await deploymentOf(laptop.id);
      await t.core.db.query(sql`UPDATE orders SET status = 'Cancelled' WHERE id = ${orderId}`);
      const res = await admin().post(`/v4/orders/${orderId}/accessories`, { productId: laptop.id });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('order_closed');
    });

    it('needs exactly one device reference, and a visible order', async () => {
      const laptop = await newDevice();
      const orderId = await deploymentOf(laptop.id);
      for (const body of [{}, { productId: laptop.id, serialNumber: laptop.serialNumber }]) {
        const res = await admin().post(`/v4/orders/${orderId}/accessories`, body);
        expect(res.status).toBe(400);
        expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'productId', rule: 'exactly_one' })]);
      }
      expect((await admin().post('/v4/orders/ord_unknown/accessories', { productId: laptop.id })).status).toBe(404);
      const eveOrder = await admin().post('/v4/orders', { orderType: 'Maintenance', employeeId: employee('eve'), productIds: [(await newDevice({ holder: 'eve' })).id] });
      const hidden = await manager().post(`/v4/orders/${eveOrder.body.data.id}/accessories`, { productId: eveOrder.body.data.productIds[0] });
      expect(hidden.status).toBe(404);
    });
  });
});
