import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { connect, data } from '../mcp/support/mcp.js';

/*
 * An order shows a device only to a reader who may read that device (get_product). Mia, the demo
 * manager (team Engineering, region DE), sees Erik's orders (Engineering, in SE), but not US stock
 * on its way to him, nor his laptop once it is back in stock in SE: those stay on the order as
 * hidden entries, without id, serial number or type, in every order read. Eve (an employee) sees
 * her Collection, but not the phone once it is company stock again.
 */

describe.each(backends())('order-device-scope: order reads show only the devices get_product shows [%s]', (backend) => {
  let t: ListeningTestApp;
  let keys: ListeningTestApp['demo']['apiKeys'];
  const ids = { deployment: '', offboarding: '', collection: '', accessory: '', shortage: '' };
  let usLaptop: { id: string; serial: string };
  let erikLaptop: { id: string; serial: string };
  let evePhone: { id: string; serial: string };

  const call = async (key: string, path: string, body?: unknown) => {
    const response = await fetch(`${t.baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { ok: boolean; data: any } };
  };
  const ok = async (key: string, path: string, body?: unknown) => {
    const { status, body: envelope } = await call(key, path, body);
    expect(status, `${path}: ${JSON.stringify(envelope)}`).toBeLessThan(300);
    return envelope.data;
  };
  const post = (orderId: string, ...events: unknown[]) => events.reduce<Promise<unknown>>((done, event) => done.then(() => ok(keys.admin, `/v4/orders/${orderId}/events`, event)), Promise.resolve());
  /** An order that takes the device back from the employee into company stock. */
  const backToStock = async (orderType: 'Offboarding' | 'Collection', employeeId: string, productId: string): Promise<string> =>
    (await ok(keys.admin, '/v4/orders', { orderType, employeeId, productIds: [productId], dispositions: [{ productId, action: 'return_to_stock' }] })).id;
  const device = async (id: string) => ({
    id,
    serial: (await t.core.db.query<{ serial: string }>(sql`SELECT serial_number AS serial FROM devices WHERE id = ${id}`))[0]!.serial,
  });
  const mentions = (value: unknown, d: { id: string; serial: string }) => {
    const text = JSON.stringify(value);
    return text.includes(d.id) || text.includes(d.serial);
  };

  beforeAll(async () => {
    t = await startListeningApp(backend);
    keys = t.demo.apiKeys;
    const { employees, devices } = t.demo;
    usLaptop = await device(devices['stockLaptopUs1']!);
    erikLaptop = await device(devices['erikLaptop']!);
    evePhone = await device(devices['evePhone']!);

    // US stock on its way to Erik: shipped, reported in transit, a charger requested for it.
    ids.deployment = (await ok(keys.admin, '/v4/orders', { orderType: 'Deployment', employeeId: employees.erik, productIds: [usLaptop.id] })).id;
    await post(
      ids.deployment,
      { type: 'status', status: 'In Progress' },
      { type: 'shipment', carrier: 'DHL', trackingNumber: '00340434161094042999', direction: 'outbound' },
      { type: 'status', status: 'Shipped' },
      { type: 'device', productId: usLaptop.id, status: 'in_transit' },
    );
    ids.accessory = (await ok(keys.admin, `/v4/orders/${ids.deployment}/accessories`, { productId: usLaptop.id })).subOrders[0].id;

    // Erik's laptop handed back into stock in SE, outside Mia's region.
    ids.offboarding = await backToStock('Offboarding', employees.erik, erikLaptop.id);
    await post(ids.offboarding, { type: 'status', status: 'In Progress' }, { type: 'device', productId: erikLaptop.id, status: 'received' }, { type: 'status', status: 'Completed' });

    // US stock for Erik that went to repair before shipping: the SLA names what is missing.
    const usLaptop2 = t.demo.devices['stockLaptopUs2']!;
    ids.shortage = (await ok(keys.admin, '/v4/orders', { orderType: 'Deployment', employeeId: employees.erik, productIds: [usLaptop2] })).id;
    await t.core.db.query(sql`UPDATE devices SET status = 'In Repair' WHERE id = ${usLaptop2}`);

    // Eve's phone collected back into company stock.
    ids.collection = await backToStock('Collection', employees.eve, evePhone.id);
    await post(ids.collection, { type: 'status', status: 'In Progress' }, { type: 'status', status: 'Completed' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('get_product answers 404 for those devices to those readers (the rule the orders follow)', async () => {
    expect((await call(keys.manager, `/v4/products/${usLaptop.id}`)).status).toBe(404);
    expect((await call(keys.manager, `/v4/products/${erikLaptop.serial}`)).status).toBe(404);
    expect((await call(keys.employee, `/v4/products/${evePhone.id}`)).status).toBe(404);
    // The orders themselves are visible to them.
    expect((await call(keys.manager, `/v4/orders/${ids.deployment}`)).status).toBe(200);
    expect((await call(keys.employee, `/v4/orders/${ids.collection}`)).status).toBe(200);
  });

  it('get_order lists such a device as hidden: no id, serial or type; role and progress kept; out of productIds and sub-orders', async () => {
    const order = await ok(keys.manager, `/v4/orders/${ids.deployment}`);
    expect(order.productIds).toEqual([]);
    expect(order.deviceRequests).toEqual([{ productId: null, serialNumber: null, productType: null, role: 'deliver', status: 'in_transit', hidden: true }]);
    expect(order.subOrders).toEqual([expect.objectContaining({ id: ids.accessory, productIds: [] })]);
    expect(mentions(order, usLaptop)).toBe(false);

    const returned = await ok(keys.manager, `/v4/orders/${ids.offboarding}`);
    expect(returned.deviceRequests).toEqual([{ productId: null, serialNumber: null, productType: null, role: 'return', status: 'received', hidden: true }]);
    expect(returned.dispositions).toEqual([{ productId: null, action: 'return_to_stock', hidden: true }]);
    expect(mentions(returned, erikLaptop)).toBe(false);

    const collected = await ok(keys.employee, `/v4/orders/${ids.collection}`);
    expect(collected.productIds).toEqual([]);
    expect(collected.deviceRequests[0]).toMatchObject({ productId: null, serialNumber: null, hidden: true });
    expect(mentions(collected, evePhone)).toBe(false);

    // The sub-order read on its own agrees.
    const accessory = await ok(keys.manager, `/v4/orders/${ids.accessory}`);
    expect(accessory.deviceRequests).toEqual([expect.objectContaining({ productId: null, hidden: true })]);
    expect(mentions(accessory, usLaptop)).toBe(false);
  });

  it('history, tracking and SLA hide it in events, device effects and the timeline', async () => {
    const history = await ok(keys.manager, `/v4/orders/${ids.deployment}/history`);
    expect(history.timeline).toEqual([expect.objectContaining({ productId: null, serialNumber: null, role: 'deliver', hidden: true })]);
    const deviceEvent = history.events.find((e: { type: string }) => e.type === 'device');
    expect(deviceEvent).toMatchObject({ productId: null, hidden: true, data: { status: 'in_transit' } });
    const shipped = history.events.find((e: { statusTo: string | null }) => e.statusTo === 'Shipped');
    expect(shipped.data.deviceEffects).toEqual([expect.objectContaining({ productId: null, statusFrom: 'Available', statusTo: 'In Transit', hidden: true })]);
    expect(mentions(history, usLaptop)).toBe(false);

    const returned = await ok(keys.manager, `/v4/orders/${ids.offboarding}/history`);
    expect(returned.timeline[0]).toMatchObject({ productId: null, hidden: true });
    expect(mentions(returned, erikLaptop)).toBe(false);

    const tracking = await ok(keys.manager, `/v4/orders/${ids.deployment}/tracking`);
    const tracked = tracking.shipments[0].events.find((e: { type: string }) => e.type === 'device');
    expect(tracked).toMatchObject({ deviceId: null, hidden: true, description: 'A device outside your scope: in_transit' });
    expect(mentions(tracking, usLaptop)).toBe(false);
    expect(mentions(await ok(keys.manager, `/v4/orders/${ids.deployment}/sla`), usLaptop)).toBe(false);

    const shortage = await device(t.demo.devices['stockLaptopUs2']!);
    const sla = await ok(keys.manager, `/v4/orders/${ids.shortage}/sla`);
    expect(sla.reasons).toContainEqual(expect.objectContaining({ reason: 'stock_shortage', note: 'No longer available to deliver: a device outside your scope (In Repair)' }));
    expect(mentions(sla, shortage)).toBe(false);
    const adminSla = await ok(keys.admin, `/v4/orders/${ids.shortage}/sla`);
    expect(adminSla.reasons).toContainEqual(expect.objectContaining({ note: `No longer available to deliver: ${shortage.serial} (In Repair)` }));
  });

  it('list_orders leaves it out of productIds, and its serial number finds no order', async () => {
    const listed = await ok(keys.manager, `/v4/orders?employeeId=${t.demo.employees.erik}`);
    const byId = new Map<string, { productIds: string[] }>(listed.orders.map((o: { id: string; productIds: string[] }) => [o.id, o]));
    expect(byId.get(ids.deployment)?.productIds).toEqual([]);
    expect(byId.get(ids.offboarding)?.productIds).toEqual([]);
    expect(mentions(listed, usLaptop) || mentions(listed, erikLaptop)).toBe(false);
    expect((await ok(keys.manager, `/v4/orders?query=${encodeURIComponent(usLaptop.serial)}`)).orders).toEqual([]);
    expect((await ok(keys.employee, `/v4/orders?query=${encodeURIComponent(evePhone.serial)}`)).orders).toEqual([]);
    // The admin, who may read the device, finds the order by it.
    const adminFinds = await ok(keys.admin, `/v4/orders?query=${encodeURIComponent(usLaptop.serial)}`);
    expect(adminFinds.orders.map((o: { id: string }) => o.id)).toContain(ids.deployment);
  });

  it('the admin, who may read every device, sees them all', async () => {
    const order = await ok(keys.admin, `/v4/orders/${ids.deployment}`);
    expect(order.productIds).toEqual([usLaptop.id]);
    expect(order.deviceRequests).toEqual([{ productId: usLaptop.id, serialNumber: usLaptop.serial, productType: 'Laptops', role: 'deliver', status: 'in_transit' }]);
    expect(order.subOrders[0].productIds).toEqual([usLaptop.id]);
    const history = await ok(keys.admin, `/v4/orders/${ids.offboarding}/history`);
    expect(history.timeline[0]).toMatchObject({ productId: erikLaptop.id, serialNumber: erikLaptop.serial });
    expect(JSON.stringify(history)).not.toContain('"hidden"');
  });

  it('MCP answers the same, valid against the tools’ output schemas', async () => {
    const mcp = await connect(t.mcpUrl, keys.manager);
    try {
      const order = data(await mcp.client.callTool({ name: 'get_order', arguments: { id: ids.deployment } }));
      expect(order.deviceRequests[0]).toMatchObject({ productId: null, hidden: true });
      const history = data(await mcp.client.callTool({ name: 'get_order_history', arguments: { id: ids.deployment } }));
      expect(history.timeline[0]).toMatchObject({ productId: null, hidden: true });
      const tracking = data(await mcp.client.callTool({ name: 'get_tracking', arguments: { id: ids.deployment } }));
      expect(mentions(tracking, usLaptop)).toBe(false);
    } finally {
      await mcp.close();
    }
  });

  it('shows the device again once the reader may read it: delivered to Erik, it is his', async () => {
    await post(ids.deployment, { type: 'status', status: 'Delivered' });
    expect((await call(keys.manager, `/v4/products/${usLaptop.id}`)).status).toBe(200);
    const order = await ok(keys.manager, `/v4/orders/${ids.deployment}`);
    expect(order.productIds).toEqual([usLaptop.id]);
    expect(order.deviceRequests[0]).toEqual(expect.objectContaining({ productId: usLaptop.id, serialNumber: usLaptop.serial }));
    expect(order.deviceRequests[0]).not.toHaveProperty('hidden');
  });
});
