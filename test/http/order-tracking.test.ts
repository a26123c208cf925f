import nock from 'nock';
import { loadConfig } from '../../src/kit/config.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { daysAfter, insertEvent, insertOrder, insertShipment, moveOrder } from '../helpers/orders.js';

const COURIER = 'http://courier.test';
// Generous, so that answers in time are never late on a busy machine; the slow courier takes far longer.
const TIMEOUT_MS = 1_000;
const SLOW_COURIER_MS = 10_000;
const START = new Date('2031-05-04T09:00:00.000Z');
const day = (n: number) => daysAfter(START, n);
const at = (n: number) => day(n).toISOString();

/** An order shipped to Dana: an outbound DHL parcel, a return UPS label, and its stored milestones. */
async function shippedOrder(t: TestApp, employee: 'dana' | 'eve' = 'dana') {
  const device = employee === 'dana' ? t.demo.devices.stockLaptopDe2! : t.demo.devices.stockTablet!;
  const id = await insertOrder(t, {
    orderType: 'Deployment',
    employeeId: t.demo.employees[employee],
    country: employee === 'dana' ? 'DE' : 'US',
    createdAt: START,
    devices: [{ deviceId: device, role: 'deliver' }],
  });
  await moveOrder(t, id, 'In Progress', day(0.5));
  const tag = id.slice(-8);
  const outbound = { carrier: 'DHL', trackingNumber: `JD0001${tag}`, createdAt: day(1) };
  const inbound = { carrier: 'UPS', trackingNumber: `1Z999${tag}`, direction: 'return', createdAt: day(1.1) };
  await insertShipment(t, id, outbound);
  await insertShipment(t, id, inbound);
  await insertEvent(t, id, { type: 'device', deviceId: device, data: { status: 'packed' }, occurredAt: day(1.2) });
  await moveOrder(t, id, 'Shipped', day(1.5));
  return { id, device, outbound, inbound };
}

const trackingPath = (carrier: string, trackingNumber: string) => `/v1/tracking/${carrier}/${trackingNumber}`;

describe.each(backends())('get_tracking [%s]', (backend) => {
  let t: TestApp;
  const tracking = (id: string, key = t.demo.apiKeys.admin) => client(t.app, key).get(`/v4/orders/${id}/tracking`);

  beforeAll(async () => {
    // Only the courier is mocked; the PostgreSQL backend stays reachable on loopback.
    nock.disableNetConnect();
    nock.enableNetConnect(/127\.0\.0\.1|localhost/);
    t = await startTestApp(backend, { config: { courierApiUrl: COURIER, courierTimeoutMs: TIMEOUT_MS } });
  });
  afterEach(() => {
    nock.cleanAll();
  });
  afterAll(async () => {
    await t.close();
    nock.cleanAll();
    nock.enableNetConnect();
  });

  it('merges live courier events with the stored ones, per shipment, sorted and marked by source', async () => {
    const order = await shippedOrder(t);
    const scope = nock(COURIER)
      .get(trackingPath('DHL', order.outbound.trackingNumber))
      .reply(200, {
        status: 'in_transit',
        events: [
          { occurredAt: at(2), status: 'in_transit', location: 'Leipzig Hub', description: 'Arrived at hub' },
          { occurredAt: '2031-05-05T12:00:00+02:00', status: 'picked_up' },
        ],
      })
      .get(trackingPath('UPS', order.inbound.trackingNumber))
      .reply(200, { status: 'label_created', events: [] });

    const res = await tracking(order.id);
    expect(res.status).toBe(200);
    expect(scope.isDone()).toBe(true);
    const { shipments } = res.body.data;
    expect(res.body.data).toMatchObject({ orderId: order.id, status: 'Shipped' });
    expect(shipments.map((s: any) => [s.carrier, s.trackingNumber, s.direction])).toEqual([
      ['DHL', order.outbound.trackingNumber, 'outbound'],
      ['UPS', order.inbound.trackingNumber, 'return'],
    ]);
    const [dhl, ups] = shipments;
    expect(dhl.courier).toEqual({ state: 'live' });
    expect(dhl.currentStatus).toBe('in_transit');
    expect(dhl.events.map((e: any) => [e.source, e.status, e.occurredAt])).toEqual([
      ['stored', 'registered', at(1)],
      ['courier', 'picked_up', '2031-05-05T10:00:00.000Z'],
      ['stored', 'packed', at(1.2)],
      ['stored', 'Shipped', at(1.5)],
      ['courier', 'in_transit', at(2)],
    ]);
    expect(dhl.events[4]).toEqual({
      source: 'courier',
      type: 'courier',
      occurredAt: at(2),
      status: 'in_transit',
      location: 'Leipzig Hub',
      description: 'Arrived at hub',
      deviceId: null,
    });
    expect(dhl.events[2]).toMatchObject({ source: 'stored', type: 'device', deviceId: order.device });
    // Each shipment carries its own registration, and the order's milestones.
    expect(ups.courier).toEqual({ state: 'live' });
    expect(ups.currentStatus).toBe('label_created');
    expect(ups.events.map((e: any) => [e.type, e.occurredAt])).toEqual([
      ['shipment', at(1.1)],
      ['device', at(1.2)],
      ['status_changed', at(1.5)],
    ]);
  });

  it('tracks an order placed and shipped through the API', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const created = await api.post('/v4/orders', {
      orderType: 'Deployment',
      employeeId: t.demo.employees.dana,
      productIds: [t.demo.devices.stockHeadset],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    for (const event of [
      { type: 'status', status: 'In Progress' },
      { type: 'shipment', carrier: 'GLS', trackingNumber: 'GLS-778899', direction: 'outbound' },
      { type: 'status', status: 'Shipped' },
    ]) {
      expect((await api.post(`/v4/orders/${id}/events`, event)).status).toBe(200);
    }
    const courierEventAt = new Date(Date.now() + 60_000).toISOString();
    nock(COURIER)
      .get(trackingPath('GLS', 'GLS-778899'))
      .reply(200, { status: 'out_for_delivery', events: [{ occurredAt: courierEventAt, status: 'out_for_delivery', location: 'Berlin' }] });
    const res = await tracking(id);
    expect(res.body.data.status).toBe('Shipped');
    const [gls] = res.body.data.shipments;
    expect(gls).toMatchObject({ carrier: 'GLS', trackingNumber: 'GLS-778899', direction: 'outbound', courier: { state: 'live' }, currentStatus: 'out_for_delivery' });
    expect(gls.events.map((e: any) => [e.source, e.type, e.status])).toEqual([
      ['stored', 'shipment', 'registered'],
      ['stored', 'status_changed', 'Shipped'],
      ['courier', 'courier', 'out_for_delivery'],
    ]);
  });

  it('queries the couriers of several shipments concurrently', async () => {
    const order = await shippedOrder(t);
    // The DHL answer waits for the UPS request: sequential calls would time out.
    let upsArrived!: () => void;
    const ups = new Promise<void>((resolve) => (upsArrived = resolve));
    nock(COURIER)
      .get(trackingPath('DHL', order.outbound.trackingNumber))
      .reply(200, (_uri, _body, callback) => {
        void ups.then(() => callback(null, { status: 'in_transit', events: [] }));
      })
      .get(trackingPath('UPS', order.inbound.trackingNumber))
      .reply(200, () => {
        upsArrived();
        return { status: 'label_created', events: [] };
      });
    const res = await tracking(order.id);
    expect(res.body.data.shipments.map((s: any) => s.courier.state)).toEqual(['live', 'live']);
  });

  it('answers the stored events within the timeout when the courier is slow', async () => {
    const order = await shippedOrder(t);
    nock(COURIER)
      .get(trackingPath('DHL', order.outbound.trackingNumber))
      .delay(SLOW_COURIER_MS)
      .reply(200, { status: 'in_transit', events: [] })
      .get(trackingPath('UPS', order.inbound.trackingNumber))
      .delay(SLOW_COURIER_MS)
      .reply(200, { status: 'label_created', events: [] });
    const started = Date.now();
    const res = await tracking(order.id);
    // Answered at the timeout, long before the courier would have.
    expect(Date.now() - started).toBeLessThan(SLOW_COURIER_MS / 2);
    expect(res.status).toBe(200);
    const [dhl] = res.body.data.shipments;
    expect(dhl.courier).toEqual({ state: 'timeout', detail: `no answer within ${TIMEOUT_MS} ms` });
    expect(dhl.currentStatus).toBe('Shipped');
    expect(dhl.events.every((e: any) => e.source === 'stored')).toBe(true);
    expect(dhl.events).toHaveLength(3);
  });

  it('says the courier is unavailable when it is down or answers an error status', async () => {
    const order = await shippedOrder(t);
    nock(COURIER)
      .get(trackingPath('DHL', order.outbound.trackingNumber))
      .replyWithError('connect ECONNREFUSED')
      .get(trackingPath('UPS', order.inbound.trackingNumber))
      .reply(503, 'Service Unavailable');
    const res = await tracking(order.id);
    expect(res.status).toBe(200);
    const [dhl, ups] = res.body.data.shipments;
    expect(dhl.courier).toEqual({ state: 'unavailable', detail: expect.stringContaining('ECONNREFUSED') });
    expect(ups.courier).toEqual({ state: 'unavailable', detail: 'courier answered HTTP 503' });
    expect(ups.events.map((e: any) => e.source)).toEqual(['stored', 'stored', 'stored']);
  });

  it('says the response is invalid when the courier answers a malformed body', async () => {
    const order = await shippedOrder(t);
    nock(COURIER)
      .get(trackingPath('DHL', order.outbound.trackingNumber))
      .reply(200, { status: 'in_transit', events: [{ occurredAt: 'yesterday', status: 'picked_up' }] })
      .get(trackingPath('UPS', order.inbound.trackingNumber))
      .reply(200, '<html>maintenance</html>', { 'content-type': 'text/html' });
    const res = await tracking(order.id);
    expect(res.status).toBe(200);
    const [dhl, ups] = res.body.data.shipments;
    expect(dhl.courier).toEqual({ state: 'invalid_response', detail: expect.stringContaining('events.0.occurredAt') });
    expect(dhl.events.every((e: any) => e.source === 'stored')).toBe(true);
    expect(ups.courier).toEqual({ state: 'invalid_response', detail: 'the body is not JSON' });
  });

  it('answers an order without shipments with none, without calling the courier', async () => {
    const id = await insertOrder(t, { orderType: 'Collection', employeeId: t.demo.employees.dana, country: 'DE', createdAt: START });
    const res = await tracking(id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ orderId: id, status: 'Pending', shipments: [] });
  });

  it('scopes like get_order: a manager sees their team only, an employee their own orders', async () => {
    const danas = await shippedOrder(t);
    const eves = await shippedOrder(t, 'eve');
    nock(COURIER).get(/\/v1\/tracking\//).times(4).reply(200, { status: 'in_transit', events: [] });
    expect((await tracking(danas.id, t.demo.apiKeys.manager)).status).toBe(200);
    const hidden = await tracking(eves.id, t.demo.apiKeys.manager);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('not_found');
    expect((await tracking(eves.id, t.demo.apiKeys.employee)).status).toBe(200);
    expect((await tracking(danas.id, t.demo.apiKeys.employee)).status).toBe(404);
  });

  it('answers 404 for an unknown order, 400 for a malformed id and 403 without mcp:orders:read', async () => {
    expect((await tracking('ord_missing')).status).toBe(404);
    const bad = await client(t.app, t.demo.apiKeys.admin).get(`/v4/orders/${'x'.repeat(65)}/tracking`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('id');
    const order = await shippedOrder(t);
    const denied = await tracking(order.id, await keyWith(t, 'manager', ['mcp:orders:write', 'mcp:employees:read']));
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('missing_capability');
  });
});

describe.each(backends())('get_tracking without a courier API [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  it('answers the stored events and says the courier is not configured', async () => {
    const order = await shippedOrder(t);
    const res = await client(t.app, t.demo.apiKeys.admin).get(`/v4/orders/${order.id}/tracking`);
    expect(res.status).toBe(200);
    const [dhl, ups] = res.body.data.shipments;
    expect(dhl.courier).toEqual({ state: 'not_configured' });
    expect(ups.courier).toEqual({ state: 'not_configured' });
    expect(dhl).toMatchObject({ currentStatus: 'Shipped', carrier: 'DHL', trackingNumber: order.outbound.trackingNumber });
    expect(dhl.events.map((e: any) => [e.source, e.type])).toEqual([
      ['stored', 'shipment'],
      ['stored', 'device'],
      ['stored', 'status_changed'],
    ]);
  });
});

describe('courier settings', () => {
  it('default to no courier and a 2000 ms timeout, and name the variable of a bad value', () => {
    const defaults = loadConfig({});
    expect(defaults.courierApiUrl).toBeUndefined();
    expect(defaults.courierTimeoutMs).toBe(2000);
    expect(loadConfig({ COURIER_API_URL: 'https://courier.example/api', COURIER_TIMEOUT_MS: '500' })).toMatchObject({
      courierApiUrl: 'https://courier.example/api',
      courierTimeoutMs: 500,
    });
    expect(() => loadConfig({ COURIER_TIMEOUT_MS: '50' })).toThrow(/COURIER_TIMEOUT_MS/);
    expect(() => loadConfig({ COURIER_API_URL: 'ftp://courier.example' })).toThrow(/COURIER_API_URL/);
  });
});
