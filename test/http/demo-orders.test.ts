import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoOrders, type DemoOrders } from '../../src/domain/orders/demo-orders.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

describe.each(backends())('demo orders [%s]', (backend) => {
  let t: TestApp;
  let orders: DemoOrders;
  let admin: ReturnType<typeof client>;
  beforeAll(async () => {
    t = await startTestApp(backend);
    orders = await seedDemoOrders(t.core, t.demo);
    admin = client(t.app, t.demo.apiKeys.admin);
  });
  afterAll(() => t.close());

  const order = async (id: string) => (await admin.get(`/v4/orders/${id}`)).body.data;
  const history = async (id: string) => (await admin.get(`/v4/orders/${id}/history`)).body.data;
  const statuses = (log: { events: Array<{ statusTo: string | null }> }) => log.events.map((e) => e.statusTo).filter(Boolean);

  it('places orders in several states', async () => {
    const list = await admin.get('/v4/orders?sort=orderType');
    expect(list.body.data.orders.map((o: { orderType: string; status: string }) => `${o.orderType}: ${o.status}`)).toEqual([
      'Collection: Pending',
      'Deployment: Shipped',
      'Maintenance: Completed',
      'Offboarding: In Progress',
      'Purchase for Inventory: In Progress',
    ]);
  });

  it('ships Dana’s laptop with DHL, with its history', async () => {
    const deployment = await order(orders.deployment);
    expect(deployment).toMatchObject({
      employeeId: t.demo.employees.dana,
      productIds: [t.demo.devices['stockLaptopDe1']],
      shipments: [{ carrier: 'DHL', direction: 'outbound' }],
    });
    const log = await history(orders.deployment);
    expect(statuses(log)).toEqual(['Pending', 'In Progress', 'Shipped']);
    expect(log.timeline[0].events.map((e: { type: string }) => e.type)).toContain('shipment');
    const laptop = (await admin.get(`/v4/products/${t.demo.devices['stockLaptopDe1']}`)).body.data;
    expect(laptop.status).toBe('In Transit');
  });

  it('holds Hans’s offboarding on an open awaiting_pickup delay', async () => {
    const log = await history(orders.offboarding);
    expect(statuses(log)).toEqual(['Pending', 'In Progress']);
    expect(log.events.at(-1)).toMatchObject({ type: 'delay', reason: 'awaiting_pickup' });
    const sla = await admin.get(`/v4/orders/${orders.offboarding}/sla`);
    expect(sla.body.data.reasons.map((r: { reason: string }) => r.reason)).toContain('awaiting_pickup');
  });

  it('completes Erik’s maintenance, his laptop back with him', async () => {
    expect(statuses(await history(orders.maintenance))).toEqual(['Pending', 'In Progress', 'Completed']);
    const laptop = (await admin.get(`/v4/products/${t.demo.devices['erikLaptop']}`)).body.data;
    expect(laptop).toMatchObject({ status: 'Assigned', assignment: { employeeId: t.demo.employees.erik } });
    expect((await order(orders.maintenance)).closedAt).not.toBeNull();
  });

  it('leaves Sofia’s collection Pending and the inventory purchase In Progress', async () => {
    expect(await order(orders.collection)).toMatchObject({ status: 'Pending', employeeId: t.demo.employees.sofia });
    expect(await order(orders.purchase)).toMatchObject({ status: 'In Progress', employeeId: null, country: 'DE' });
  });
});
