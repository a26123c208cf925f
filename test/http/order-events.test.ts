import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORDER_STATES, TRANSITIONS, type OrderState } from '../../src/domain/orders/model.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

const HOUR_MS = 3_600_000;

/** A way into each state from Pending. */
const PATH_TO: Record<OrderState, OrderState[]> = {
  Pending: [],
  'In Progress': ['In Progress'],
  'On Hold': ['On Hold'],
  Shipped: ['In Progress', 'Shipped'],
  Delivered: ['In Progress', 'Shipped', 'Delivered'],
  Completed: ['In Progress', 'Shipped', 'Delivered', 'Completed'],
  Cancelled: ['Cancelled'],
};

/** Together these walks take every allowed transition at least once. */
const WALKS: OrderState[][] = [
  ['In Progress', 'Shipped', 'Delivered', 'Completed'],
  ['On Hold', 'Pending', 'Cancelled'],
  ['In Progress', 'On Hold', 'In Progress', 'Completed'],
  ['In Progress', 'Cancelled'],
  ['In Progress', 'Shipped', 'On Hold', 'Cancelled'],
  ['On Hold', 'In Progress', 'Shipped', 'Delivered', 'Completed'],
  ['On Hold', 'Cancelled'],
];

describe.each(backends())('record_order_event: the logistics side [%s]', (backend) => {
  let t: TestApp;
  let admin: ReturnType<typeof client>;
  // The app's clock: one second passes on every reading, so events never tie by accident.
  let clock = new Date('2031-05-01T08:00:00.000Z');
  const tick = () => {
    clock = new Date(clock.getTime() + 1000);
    return clock;
  };
  const later = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };

  beforeAll(async () => {
    t = await startTestApp(backend, { core: { now: tick } });
    admin = client(t.app, t.demo.apiKeys.admin);
  });
  afterAll(() => t.close());

  const post = (orderId: string, body: Record<string, unknown>, api = admin) => api.post(`/v4/orders/${orderId}/events`, body);
  const advance = async (orderId: string, ...statuses: OrderState[]) => {
    for (const status of statuses) {
      const res = await post(orderId, { type: 'status', status });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.status).toBe(status);
    }
  };
  const place = async (orderType: string, employee: keyof TestApp['demo']['employees'], devices: string[], extra: Record<string, unknown> = {}) => {
    const productIds = devices.map((key) => t.demo.devices[key]);
    const res = await admin.post('/v4/orders', { orderType, employeeId: t.demo.employees[employee], productIds, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.id as string;
  };
  const purchase = async () => {
    const [item] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'MX Master 3S'`);
    const res = await admin.post('/v4/orders/purchase', {
      orderType: 'Purchase for Inventory',
      companyId: t.demo.companies.acme,
      items: [{ itemId: item!.id, quantity: 1, country: 'US' }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.id as string;
  };
  const device = async (key: string) => (await admin.get(`/v4/products/${t.demo.devices[key]}`)).body.data;
  const holds = async (orderId: string) =>
    (await t.core.db.query<{ n: number }>(sql`SELECT count(*) AS n FROM device_holds WHERE order_id = ${orderId}`))[0]!.n;
  const history = async (orderId: string) => (await admin.get(`/v4/orders/${orderId}/history`)).body.data;

  it('takes every allowed transition, logging each change and closing on a final state', async () => {
    for (const walk of WALKS) {
      const id = await purchase();
      await advance(id, ...walk);
      const log = await history(id);
      expect(log.events.map((e: { statusTo: string | null }) => e.statusTo)).toEqual(['Pending', ...walk]);
      const changes = log.events.filter((e: { type: string }) => e.type === 'status_changed');
      expect(changes.map((e: { statusFrom: string }) => e.statusFrom)).toEqual(['Pending', ...walk.slice(0, -1)]);
      expect(changes.every((e: { source: string }) => e.source === 'logistics')).toBe(true);
      const order = (await admin.get(`/v4/orders/${id}`)).body.data;
      expect(order.closedAt).toBe(changes.at(-1).occurredAt);
    }
    const taken = new Set(WALKS.flatMap((walk) => ['Pending', ...walk].slice(1).map((to, i) => `${['Pending', ...walk][i]}>${to}`)));
    const allowed = Object.entries(TRANSITIONS).flatMap(([from, tos]) => tos.map((to) => `${from}>${to}`));
    expect([...taken].sort()).toEqual(allowed.sort());
  });

  it('refuses every other transition with 409 invalid_transition naming from, to and the allowed next states', async () => {
    for (const from of ORDER_STATES) {
      const id = await purchase();
      await advance(id, ...PATH_TO[from]);
      for (const to of ORDER_STATES.filter((s) => !TRANSITIONS[from].includes(s))) {
        const res = await post(id, { type: 'status', status: to.toUpperCase() });
        expect(res.status, `${from} -> ${to}`).toBe(409);
        expect(res.body.error).toMatchObject({ code: 'invalid_transition', details: { from, to, allowed: [...TRANSITIONS[from]] } });
        expect(res.body.error.message).toContain(`${from} cannot move to ${to}`);
      }
      expect((await admin.get(`/v4/orders/${id}`)).body.data.status).toBe(from);
    }
  });

  it('takes the status in any case and stores it canonically; refuses an unknown status', async () => {
    const id = await purchase();
    const res = await post(id, { type: 'status', status: 'in progress', note: 'Ordered from the supplier' });
    expect(res.body.data.status).toBe('In Progress');
    const [change] = (await history(id)).events.slice(-1);
    expect(change).toMatchObject({ statusFrom: 'Pending', statusTo: 'In Progress', note: 'Ordered from the supplier' });
    const bad = await post(id, { type: 'status', status: 'shipping' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('status');
    expect(bad.body.error.details[0].message).toContain('In Progress');
  });

  it('moves delivered devices: In Transit when Shipped, assigned on Delivered, held until Completed', async () => {
    const id = await place('Deployment', 'dana', ['stockLaptopDe1']);
    await advance(id, 'In Progress');
    expect((await device('stockLaptopDe1')).status).toBe('Available');
    await advance(id, 'Shipped');
    expect((await device('stockLaptopDe1')).status).toBe('In Transit');
    await advance(id, 'Delivered');
    const delivered = (await history(id)).events.at(-1);
    const laptop = await device('stockLaptopDe1');
    expect(laptop).toMatchObject({ status: 'Assigned', assignment: { employeeId: t.demo.employees.dana, assignedAt: delivered.occurredAt } });
    expect(await holds(id)).toBe(1);
    await advance(id, 'Completed');
    expect(await holds(id)).toBe(0);
    expect((await device('stockLaptopDe1')).status).toBe('Assigned');
    expect((await admin.get(`/v4/orders/${id}`)).body.data.closedAt).not.toBeNull();
  });

  it('settles returned devices on Delivered by their disposition', async () => {
    const offboarding = await place('Offboarding', 'dana', ['danaLaptop', 'danaMonitor'], {
      dispositions: [
        { productId: t.demo.devices.danaLaptop, action: 'wipe_and_redeploy' },
        { productId: t.demo.devices.danaMonitor, action: 'keep' },
      ],
    });
    const collection = await place('Collection', 'eve', ['evePhone'], {
      dispositions: [{ productId: t.demo.devices.evePhone, action: 'recycle' }],
    });
    const plain = await place('Offboarding', 'hans', ['hansDesktop']);
    for (const id of [offboarding, collection, plain]) {
      await advance(id, 'In Progress', 'Shipped');
      expect((await device('hansDesktop')).status).toBe('Assigned');
      await advance(id, 'Delivered');
    }
    expect(await device('danaLaptop')).toMatchObject({ status: 'Available', assignment: null });
    expect(await device('danaMonitor')).toMatchObject({ status: 'Assigned', assignment: { employeeId: t.demo.employees.dana } });
    expect(await device('evePhone')).toMatchObject({ status: 'Retired', assignment: null });
    expect(await device('hansDesktop')).toMatchObject({ status: 'Available', assignment: null });
    await advance(plain, 'Completed');
    expect(await holds(plain)).toBe(0);
    expect(await device('hansDesktop')).toMatchObject({ status: 'Available', assignment: null });
  });

  it('puts serviced devices In Repair while In Progress and back with their holder on Completed', async () => {
    const id = await place('Maintenance', 'erik', ['erikLaptop']);
    await advance(id, 'In Progress');
    expect((await device('erikLaptop')).status).toBe('In Repair');
    const repaired = await post(id, { type: 'device', productId: t.demo.devices.erikLaptop, status: 'repaired', note: 'New keyboard' });
    expect(repaired.status).toBe(200);
    expect(repaired.body.data.deviceRequests[0]).toMatchObject({ productId: t.demo.devices.erikLaptop, status: 'repaired' });
    await advance(id, 'Completed');
    expect(await device('erikLaptop')).toMatchObject({ status: 'Assigned', assignment: { employeeId: t.demo.employees.erik } });
    expect(await holds(id)).toBe(0);
  });

  it('restores every device on Cancelled and releases the holds, so the devices can be ordered again', async () => {
    const deployment = await place('Deployment', 'dana', ['stockLaptopDe2']);
    await advance(deployment, 'In Progress', 'Shipped', 'On Hold');
    expect((await device('stockLaptopDe2')).status).toBe('In Transit');
    await advance(deployment, 'Cancelled');
    expect(await device('stockLaptopDe2')).toMatchObject({ status: 'Available', assignment: null });
    expect(await holds(deployment)).toBe(0);
    const cancelled = (await history(deployment)).events.at(-1);
    expect(cancelled.data.deviceEffects).toEqual([
      { productId: t.demo.devices.stockLaptopDe2, statusFrom: 'In Transit', statusTo: 'Available', employeeIdFrom: null, employeeIdTo: null },
    ]);
    await place('Deployment', 'dana', ['stockLaptopDe2']);

    // Greta is in Globex: the admin of both companies moves her orders too.
    const maintenance = await place('Maintenance', 'greta', ['gretaLaptop']);
    await advance(maintenance, 'In Progress');
    expect((await device('gretaLaptop')).status).toBe('In Repair');
    await advance(maintenance, 'Cancelled');
    expect(await device('gretaLaptop')).toMatchObject({ status: 'Assigned', assignment: { employeeId: t.demo.employees.greta } });
  });

  it('leaves the device of an accessory sub-order to its parent order', async () => {
    const parent = await place('Deployment', 'eve', ['stockTablet']);
    const requested = await admin.post(`/v4/orders/${parent}/accessories`, { productId: t.demo.devices.stockTablet });
    expect(requested.status).toBe(201);
    const accessory = requested.body.data.subOrders[0].id as string;
    for (const status of ['In Progress', 'Shipped', 'Delivered', 'Completed'] as const) {
      await advance(accessory, status);
      expect(await device('stockTablet'), status).toMatchObject({ status: 'Available', assignment: null });
    }
    expect(await holds(parent)).toBe(1);
    expect((await admin.get(`/v4/orders/${parent}`)).body.data.subOrders[0]).toMatchObject({ id: accessory, status: 'Completed' });
  });

  it('keeps the event log in the order things happened, with a per-device timeline derived from it', async () => {
    const id = await place('Swap from Inventory', 'eve', ['eveLaptop', 'stockLaptopUs1']);
    const created = Date.parse((await history(id)).events[0].occurredAt);
    later(24 * HOUR_MS);
    const at = (hours: number) => new Date(created + hours * HOUR_MS).toISOString();
    const eveLaptop = t.demo.devices.eveLaptop!;
    const stockLaptopUs1 = t.demo.devices.stockLaptopUs1!;
    const steps: Array<Record<string, unknown>> = [
      { type: 'status', status: 'In Progress', occurredAt: at(1) },
      { type: 'device', productId: eveLaptop, status: 'picked_up', occurredAt: at(2) },
      { type: 'shipment', carrier: 'DHL', trackingNumber: 'RT-1', direction: 'return', occurredAt: at(2) },
      { type: 'shipment', carrier: 'UPS', trackingNumber: '1Z999', direction: 'outbound', occurredAt: at(3) },
      { type: 'status', status: 'Shipped', occurredAt: at(3) },
      { type: 'delay', reason: 'customs', note: 'Held at customs', occurredAt: at(4) },
      { type: 'delay_resolved', reason: 'customs', occurredAt: at(6) },
      // Reported late: it happened before the delay was resolved.
      { type: 'device', productId: eveLaptop, status: 'received', occurredAt: at(5) },
      { type: 'status', status: 'Delivered', occurredAt: at(7) },
    ];
    for (const step of steps) {
      const res = await post(id, step);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const log = await history(id);
    const label = (e: { type: string; statusTo: string | null; data: Record<string, unknown> }) =>
      e.type === 'status_changed' ? e.statusTo : e.type === 'device' ? `device:${String(e.data['status'])}` : e.type === 'shipment' ? `shipment:${String(e.data['direction'])}` : e.type;
    expect(log.orderId).toBe(id);
    expect(log.events.map(label)).toEqual([
      'created',
      'In Progress',
      'device:picked_up',
      'shipment:return',
      'shipment:outbound',
      'Shipped',
      'delay',
      'device:received',
      'delay_resolved',
      'Delivered',
    ]);
    expect(log.events[0]).toMatchObject({ type: 'created', statusTo: 'Pending', source: 'api' });
    expect(log.events[6]).toMatchObject({ type: 'delay', reason: 'customs', note: 'Held at customs', source: 'logistics', occurredAt: at(4) });
    expect(log.events[4]).toMatchObject({ productId: null, data: { carrier: 'UPS', trackingNumber: '1Z999', direction: 'outbound' } });
    expect(log.events[9].data.deviceEffects).toEqual(
      expect.arrayContaining([
        { productId: eveLaptop, statusFrom: 'Assigned', statusTo: 'Available', employeeIdFrom: t.demo.employees.eve, employeeIdTo: null },
        { productId: stockLaptopUs1, statusFrom: 'In Transit', statusTo: 'Assigned', employeeIdFrom: null, employeeIdTo: t.demo.employees.eve },
      ]),
    );

    const timeline = Object.fromEntries(log.timeline.map((d: { productId: string }) => [d.productId, d]));
    expect(timeline[stockLaptopUs1]).toMatchObject({ role: 'deliver', serialNumber: expect.stringMatching(/^SN-AC-/) });
    expect(timeline[stockLaptopUs1].events.map(label)).toEqual(['created', 'In Progress', 'shipment:outbound', 'Shipped', 'Delivered']);
    expect(timeline[eveLaptop].events.map(label)).toEqual([
      'created',
      'In Progress',
      'device:picked_up',
      'shipment:return',
      'Shipped',
      'device:received',
      'Delivered',
    ]);

    const order = (await admin.get(`/v4/orders/${id}`)).body.data;
    expect(order.shipments).toEqual([
      expect.objectContaining({ carrier: 'DHL', trackingNumber: 'RT-1', direction: 'return', createdAt: at(2) }),
      expect.objectContaining({ carrier: 'UPS', trackingNumber: '1Z999', direction: 'outbound', createdAt: at(3) }),
    ]);
    expect(order.deviceRequests.find((d: { productId: string }) => d.productId === eveLaptop).status).toBe('received');
  });

  it('refuses a resolution without an open delay, a device not on the order and a repeated shipment', async () => {
    const id = await place('Deployment', 'eve', ['stockLaptopUs2']);
    const unresolved = await post(id, { type: 'delay_resolved', reason: 'customs' });
    expect(unresolved.status).toBe(422);
    expect(unresolved.body.error).toMatchObject({ code: 'no_open_delay', details: [{ field: 'reason' }] });
    expect((await post(id, { type: 'delay', reason: 'stock_shortage' })).status).toBe(200);
    expect((await post(id, { type: 'delay_resolved', reason: 'stock_shortage' })).status).toBe(200);
    expect((await post(id, { type: 'delay_resolved', reason: 'stock_shortage' })).status).toBe(422);

    const stranger = await post(id, { type: 'device', productId: t.demo.devices.stockTablet, status: 'delivered' });
    expect(stranger.status).toBe(422);
    expect(stranger.body.error).toMatchObject({ code: 'device_not_on_order', details: [{ field: 'productId' }] });

    const shipment = { type: 'shipment', carrier: 'FedEx', trackingNumber: '7777', direction: 'outbound' };
    expect((await post(id, shipment)).status).toBe(200);
    const again = await post(id, shipment);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('shipment_exists');

    await advance(id, 'Cancelled');
    const closed = await post(id, { type: 'delay', reason: 'customs' });
    expect(closed.status).toBe(422);
    expect(closed.body.error.code).toBe('order_closed');
  });

  it('dates events now by default, and refuses a time in the future or before the order’s last status change', async () => {
    const id = await purchase();
    const future = await post(id, { type: 'status', status: 'In Progress', occurredAt: new Date(clock.getTime() + HOUR_MS).toISOString() });
    expect(future.status).toBe(400);
    expect(future.body.error.details[0]).toMatchObject({ field: 'occurredAt', rule: 'not_in_future' });
    await advance(id, 'In Progress');
    const progressAt = (await history(id)).events.at(-1).occurredAt as string;
    const before = new Date(Date.parse(progressAt) - 1000).toISOString();
    const backwards = await post(id, { type: 'status', status: 'On Hold', occurredAt: before });
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.details[0]).toMatchObject({ field: 'occurredAt', rule: 'not_before_last_status_change' });
    const beforeOrder = await post(id, { type: 'delay', reason: 'customs', occurredAt: '2020-01-01T00:00:00Z' });
    expect(beforeOrder.body.error.details[0]).toMatchObject({ field: 'occurredAt', rule: 'not_before_order_created' });
    // Other events may be reported late, between status changes.
    const lateDelay = await post(id, { type: 'delay', reason: 'customs', occurredAt: before });
    expect(lateDelay.status).toBe(200);
    const malformed = await post(id, { type: 'delay', reason: 'customs', occurredAt: 'yesterday' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].field).toBe('occurredAt');
  });

  it('validates the body per event type, naming the field', async () => {
    const id = await purchase();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'teleport' }, 'type'],
      [{ status: 'Shipped' }, 'type'],
      [{ type: 'delay', reason: 'aliens' }, 'reason'],
      [{ type: 'delay', reason: 'customs', carrier: 'DHL' }, 'carrier'],
      [{ type: 'shipment', carrier: 'DHL', trackingNumber: 'X1', direction: 'sideways' }, 'direction'],
      [{ type: 'shipment', carrier: 'DHL', direction: 'outbound' }, 'trackingNumber'],
      [{ type: 'device', productId: t.demo.devices.stockMouse, status: 'exploded' }, 'status'],
    ];
    for (const [body, field] of cases) {
      const res = await post(id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect((await post('ord_missing', { type: 'status', status: 'In Progress' })).status).toBe(404);
  });

  it('is for the logistics side only: admins with mcp:orders:write', async () => {
    const id = await purchase();
    const body = { type: 'status', status: 'In Progress' };
    const manager = await post(id, body, client(t.app, t.demo.apiKeys.manager));
    expect(manager.status).toBe(403);
    expect(manager.body.error.code).toBe('logistics_only');
    const employee = await post(id, body, client(t.app, t.demo.apiKeys.employee));
    expect(employee.status).toBe(403);
    expect(employee.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:orders:write' } });
    const readOnly = await post(id, body, client(t.app, await keyWith(t, 'admin', ['mcp:orders:read'])));
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error.code).toBe('missing_capability');
    const writeOnly = await post(id, body, client(t.app, await keyWith(t, 'admin', ['mcp:orders:write'])));
    expect(writeOnly.status).toBe(200);
    expect(writeOnly.body.data).toMatchObject({ id, status: 'In Progress' });
  });
});
