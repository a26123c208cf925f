import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { daysAfter, insertEvent, insertOrder, moveOrder, type OrderSeed } from '../helpers/orders.js';

describe.each(backends())('get_order_sla [%s]', (backend) => {
  let t: TestApp;
  // The app's clock: each test places orders relative to START and moves `current`.
  const START = new Date('2031-03-02T08:00:00.000Z');
  let current = START;
  const day = (n: number) => daysAfter(START, n);
  const slaOf = async (id: string, key = t.demo.apiKeys.admin) => client(t.app, key).get(`/v4/orders/${id}/sla`);

  beforeAll(async () => {
    t = await startTestApp(backend, { core: { now: () => current } });
  });
  afterAll(() => t.close());

  const deployment = (extra: Partial<OrderSeed> = {}) =>
    insertOrder(t, {
      orderType: 'Deployment',
      employeeId: t.demo.employees.dana,
      country: 'DE',
      createdAt: START,
      devices: [{ deviceId: t.demo.devices.stockLaptopDe1!, role: 'deliver' }],
      ...extra,
    });

  it('is on track early in the target, with the due date and day counts', async () => {
    const id = await deployment();
    current = day(1);
    const res = await slaOf(id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      orderId: id,
      orderType: 'Deployment',
      country: 'DE',
      orderStatus: 'Pending',
      status: 'on_track',
      targetDays: 5,
      createdAt: START.toISOString(),
      closedAt: null,
      dueAt: day(5).toISOString(),
      elapsedDays: 1,
      pausedDays: 0,
      remainingDays: 4,
      reasons: [],
    });
  });

  it('turns at risk once 75% of the target has elapsed', async () => {
    const id = await deployment();
    current = day(3.6);
    expect((await slaOf(id)).body.data.status).toBe('on_track');
    current = day(3.8);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'at_risk', elapsedDays: 3.8, remainingDays: 1.2 });
  });

  it('turns at risk on an open delay, listing its reason, and back on track once resolved', async () => {
    const id = await deployment();
    await insertEvent(t, id, { type: 'delay', reason: 'address_problem', note: 'street number missing', occurredAt: day(0.5) });
    current = day(1);
    const risky = await slaOf(id);
    expect(risky.body.data.status).toBe('at_risk');
    expect(risky.body.data.reasons).toEqual([
      { reason: 'address_problem', since: day(0.5).toISOString(), note: 'street number missing', origin: 'event' },
    ]);
    await insertEvent(t, id, { type: 'delay_resolved', reason: 'address_problem', occurredAt: day(1.5) });
    current = day(2);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'on_track', reasons: [] });
  });

  it('is delayed past the due date, with the open delays as reasons', async () => {
    const id = await deployment();
    await moveOrder(t, id, 'In Progress', day(1));
    await moveOrder(t, id, 'Shipped', day(2));
    await insertEvent(t, id, { type: 'delay', reason: 'customs', note: 'held in customs', occurredAt: day(3) });
    await insertEvent(t, id, { type: 'delay', reason: 'carrier_delay', occurredAt: day(4) });
    current = day(6.5);
    const res = await slaOf(id);
    expect(res.body.data).toMatchObject({ status: 'delayed', orderStatus: 'Shipped', elapsedDays: 6.5, remainingDays: -1.5 });
    expect(res.body.data.reasons.map((r: { reason: string }) => r.reason)).toEqual(['customs', 'carrier_delay']);
    expect(res.body.data.reasons[0]).toMatchObject({ since: day(3).toISOString(), note: 'held in customs' });
  });

  it('does not count time On Hold: the clock pauses and the due date moves', async () => {
    const id = await deployment();
    await moveOrder(t, id, 'On Hold', day(1));
    current = day(9);
    const held = await slaOf(id);
    expect(held.body.data).toMatchObject({ status: 'on_track', orderStatus: 'On Hold', elapsedDays: 1, pausedDays: 8, dueAt: day(13).toISOString() });
    await moveOrder(t, id, 'In Progress', day(9));
    current = day(11);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'on_track', elapsedDays: 3, pausedDays: 8, remainingDays: 2 });
    current = day(12);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'at_risk', elapsedDays: 4, remainingDays: 1 });
    current = day(14);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'delayed', elapsedDays: 6, remainingDays: -1 });
  });

  it('judges completed orders met or missed by their closing time, whatever the clock says now', async () => {
    const onTime = await deployment();
    await moveOrder(t, onTime, 'In Progress', day(1));
    await moveOrder(t, onTime, 'Completed', day(4));
    const late = await deployment();
    await moveOrder(t, late, 'In Progress', day(1));
    await moveOrder(t, late, 'Completed', day(7));
    current = day(30);
    expect((await slaOf(onTime)).body.data).toMatchObject({ status: 'met', closedAt: day(4).toISOString(), elapsedDays: 4, remainingDays: 1 });
    expect((await slaOf(late)).body.data).toMatchObject({ status: 'missed', elapsedDays: 7, remainingDays: -2 });
  });

  it('reports a cancelled order as cancelled', async () => {
    const id = await deployment();
    await moveOrder(t, id, 'Cancelled', day(2));
    current = day(10);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'cancelled', elapsedDays: 2 });
  });

  it('derives awaiting_pickup for an offboarding still pending after its pickup window', async () => {
    const id = await insertOrder(t, {
      orderType: 'Offboarding',
      employeeId: t.demo.employees.hans,
      country: 'DE',
      createdAt: START,
      pickupWindow: { start: day(1).toISOString(), end: day(2).toISOString() },
      devices: [{ deviceId: t.demo.devices.hansDesktop!, role: 'return' }],
    });
    current = day(1.5);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'on_track', reasons: [] });
    current = day(3);
    const late = await slaOf(id);
    expect(late.body.data).toMatchObject({ status: 'at_risk', targetDays: 10 });
    expect(late.body.data.reasons).toEqual([
      { reason: 'awaiting_pickup', since: day(2).toISOString(), note: expect.stringContaining('pickup window'), origin: 'derived' },
    ]);
  });

  it('derives stock_shortage when the device to deliver is no longer available', async () => {
    const id = await deployment({ devices: [{ deviceId: t.demo.devices.stockPhoneDe!, role: 'deliver' }] });
    await t.core.db.query(sql`UPDATE devices SET status = 'In Repair' WHERE id = ${t.demo.devices.stockPhoneDe!}`);
    current = day(1);
    const res = await slaOf(id);
    expect(res.body.data.status).toBe('at_risk');
    expect(res.body.data.reasons).toEqual([
      { reason: 'stock_shortage', since: null, note: expect.stringContaining('(In Repair)'), origin: 'derived' },
    ]);
  });

  it('sets the target by order type, adding days outside the domestic countries', async () => {
    current = START;
    const cases: Array<[OrderSeed, number]> = [
      [{ orderType: 'Collection', employeeId: t.demo.employees.erik, country: 'SE', createdAt: START }, 7],
      [{ orderType: 'Maintenance', employeeId: t.demo.employees.dana, country: 'DE', createdAt: START }, 10],
      [{ orderType: 'Deployment', employeeId: t.demo.employees.dana, country: 'CH', createdAt: START }, 8],
      [{ orderType: 'Purchase for Inventory', country: 'JP', createdAt: START }, 17],
    ];
    for (const [seed, target] of cases) {
      const res = await slaOf(await insertOrder(t, seed));
      expect(res.body.data, seed.orderType).toMatchObject({ targetDays: target, dueAt: day(target).toISOString() });
    }
  });

  it('scopes like get_order: a manager sees their team, not others; an employee sees only their own', async () => {
    current = day(1);
    const danas = await deployment();
    const eves = await insertOrder(t, { orderType: 'Collection', employeeId: t.demo.employees.eve, country: 'US', createdAt: START });
    const globex = await insertOrder(t, {
      orderType: 'Collection',
      companyId: t.demo.companies.globex,
      employeeId: t.demo.employees.greta,
      country: 'DE',
      createdAt: START,
    });
    expect((await slaOf(danas, t.demo.apiKeys.manager)).status).toBe(200);
    const hidden = await slaOf(eves, t.demo.apiKeys.manager);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('not_found');
    expect((await slaOf(eves, t.demo.apiKeys.employee)).status).toBe(200);
    expect((await slaOf(danas, t.demo.apiKeys.employee)).status).toBe(404);
    expect((await slaOf(globex)).status).toBe(200);
  });

  it('follows an order placed and advanced through the API on the moving clock', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    current = day(100);
    const created = await api.post('/v4/orders', {
      orderType: 'Deployment',
      employeeId: t.demo.employees.dana,
      productIds: [t.demo.devices.stockMonitor],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const post = async (event: Record<string, unknown>) => expect((await api.post(`/v4/orders/${id}/events`, event)).status).toBe(200);
    current = day(101);
    await post({ type: 'status', status: 'In Progress' });
    current = day(102);
    await post({ type: 'delay', reason: 'customs', note: 'papers missing' });
    const risky = await slaOf(id);
    expect(risky.body.data).toMatchObject({ status: 'at_risk', elapsedDays: 2, dueAt: day(105).toISOString() });
    expect(risky.body.data.reasons).toEqual([{ reason: 'customs', since: day(102).toISOString(), note: 'papers missing', origin: 'event' }]);
    current = day(106);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'delayed', remainingDays: -1 });
    await post({ type: 'delay_resolved', reason: 'customs' });
    await post({ type: 'status', status: 'Completed' });
    current = day(120);
    expect((await slaOf(id)).body.data).toMatchObject({ status: 'missed', reasons: [], closedAt: day(106).toISOString() });
  });

  it('answers 404 for an unknown order and 400 for a malformed id', async () => {
    expect((await slaOf('ord_missing')).status).toBe(404);
    const bad = await slaOf('x'.repeat(65));
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toMatchObject({ field: 'id', rule: 'too_big' });
  });

  it('requires mcp:orders:read', async () => {
    const id = await deployment();
    const res = await slaOf(id, await keyWith(t, 'admin', ['mcp:orders:write']));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('missing_capability');
  });
});
