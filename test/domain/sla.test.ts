import { describe, expect, it } from 'vitest';
import { computeSla, type SlaEvent, type SlaOrder } from '../../src/domain/orders/sla.js';

const CREATED = '2030-01-01T00:00:00.000Z';
const at = (days: number) => new Date(Date.parse(CREATED) + days * 86_400_000);
const iso = (days: number) => at(days).toISOString();

function order(overrides: Partial<SlaOrder> = {}): SlaOrder {
  return {
    id: 'ord_1',
    orderType: 'Deployment',
    country: 'DE',
    status: 'In Progress',
    createdAt: CREATED,
    closedAt: null,
    pickupWindow: null,
    unavailableDeliverDevices: [],
    ...overrides,
  };
}

const change = (days: number, statusFrom: string, statusTo: string): SlaEvent => ({
  type: 'status_changed',
  statusFrom,
  statusTo,
  reason: null,
  note: null,
  deviceStatus: null,
  occurredAt: iso(days),
});
const delay = (days: number, reason: string, note: string | null = null): SlaEvent => ({
  type: 'delay',
  statusFrom: null,
  statusTo: null,
  reason,
  note,
  deviceStatus: null,
  occurredAt: iso(days),
});
const resolved = (days: number, reason: string): SlaEvent => ({ ...delay(days, reason), type: 'delay_resolved' });

describe('computeSla', () => {
  it('is on track early, with the target of the type and a due date from creation', () => {
    const sla = computeSla(order(), [], at(1));
    expect(sla).toMatchObject({
      status: 'on_track',
      targetDays: 5,
      dueAt: iso(5),
      elapsedDays: 1,
      pausedDays: 0,
      remainingDays: 4,
      reasons: [],
    });
  });

  it('adds the non-domestic days outside the warehouse countries, and also when the country is unknown', () => {
    expect(computeSla(order({ country: 'JP' }), [], at(0)).targetDays).toBe(8);
    expect(computeSla(order({ country: null }), [], at(0)).targetDays).toBe(8);
    expect(computeSla(order({ orderType: 'Offboarding', country: 'US' }), [], at(0)).targetDays).toBe(10);
  });

  it('is at risk from 75% of the target, and delayed past the due date', () => {
    expect(computeSla(order(), [], at(3.7)).status).toBe('on_track');
    expect(computeSla(order(), [], at(3.75)).status).toBe('at_risk');
    expect(computeSla(order(), [], at(5)).status).toBe('at_risk');
    const late = computeSla(order(), [], at(6.25));
    expect(late).toMatchObject({ status: 'delayed', elapsedDays: 6.3, remainingDays: -1.3 });
  });

  it('is at risk while a recorded delay is open, and lists it with since and note', () => {
    const sla = computeSla(order(), [delay(0.5, 'customs', 'held at the border')], at(1));
    expect(sla.status).toBe('at_risk');
    expect(sla.reasons).toEqual([{ reason: 'customs', since: iso(0.5), note: 'held at the border', origin: 'event' }]);
  });

  it('drops a delay once resolved, keeps the first since of a repeated one, and ignores events after now', () => {
    const events = [
      delay(0.2, 'customs'),
      delay(0.3, 'carrier_delay', 'first'),
      resolved(0.4, 'customs'),
      delay(0.6, 'carrier_delay', 'second'),
      delay(2, 'address_problem'),
    ];
    const sla = computeSla(order(), events, at(1));
    expect(sla.reasons).toEqual([{ reason: 'carrier_delay', since: iso(0.3), note: 'second', origin: 'event' }]);
  });

  it('stops the clock while On Hold and moves the due date by as much', () => {
    const events = [change(1, 'Pending', 'On Hold'), change(3, 'On Hold', 'In Progress')];
    const sla = computeSla(order(), events, at(4));
    expect(sla).toMatchObject({ status: 'on_track', elapsedDays: 2, pausedDays: 2, remainingDays: 3, dueAt: iso(7) });
  });

  it('keeps the clock stopped up to now while the order is still On Hold', () => {
    const sla = computeSla(order({ status: 'On Hold' }), [change(1, 'Pending', 'On Hold')], at(20));
    expect(sla).toMatchObject({ status: 'on_track', elapsedDays: 1, pausedDays: 19, dueAt: iso(24) });
  });

  it('judges a completed order by its closing time: met or missed', () => {
    const met = computeSla(order({ status: 'Completed', closedAt: iso(4) }), [], at(30));
    expect(met).toMatchObject({ status: 'met', elapsedDays: 4, remainingDays: 1 });
    const missed = computeSla(order({ status: 'Completed', closedAt: iso(6) }), [], at(30));
    expect(missed).toMatchObject({ status: 'missed', elapsedDays: 6, remainingDays: -1 });
    const heldThenMet = computeSla(
      order({ status: 'Completed', closedAt: iso(6) }),
      [change(1, 'Pending', 'On Hold'), change(2, 'On Hold', 'In Progress')],
      at(30),
    );
    expect(heldThenMet.status).toBe('met');
  });

  it('reports a cancelled order as cancelled, without derived reasons', () => {
    const sla = computeSla(
      order({ status: 'Cancelled', closedAt: iso(2), unavailableDeliverDevices: [{ productId: 'd', serialNumber: 'SN', status: 'Assigned' }] }),
      [],
      at(30),
    );
    expect(sla).toMatchObject({ status: 'cancelled', elapsedDays: 2, reasons: [] });
  });

  it('derives awaiting_pickup for a return-type order past its pickup window, not before and not once shipped', () => {
    const offboarding = order({ orderType: 'Offboarding', status: 'Pending', pickupWindow: { start: iso(1), end: iso(2) } });
    expect(computeSla(offboarding, [], at(1.5)).reasons).toEqual([]);
    const late = computeSla(offboarding, [], at(3));
    expect(late.status).toBe('at_risk');
    expect(late.reasons).toEqual([{ reason: 'awaiting_pickup', since: iso(2), note: expect.any(String), origin: 'derived' }]);
    expect(computeSla({ ...offboarding, status: 'Shipped' }, [], at(3)).reasons).toEqual([]);
    const pickedUp: SlaEvent = { ...change(2.5, 'Pending', 'Pending'), type: 'device', statusFrom: null, statusTo: null, deviceStatus: 'picked_up' };
    expect(computeSla(offboarding, [pickedUp], at(3)).reasons).toEqual([]);
    expect(computeSla({ ...offboarding, orderType: 'Deployment' }, [], at(3)).reasons).toEqual([]);
  });

  it('lists a recorded delay once when the same reason is also derived', () => {
    const collection = order({ orderType: 'Collection', pickupWindow: { start: iso(1), end: iso(2) } });
    const sla = computeSla(collection, [delay(2.5, 'awaiting_pickup', 'nobody home')], at(3));
    expect(sla.reasons).toEqual([{ reason: 'awaiting_pickup', since: iso(2.5), note: 'nobody home', origin: 'event' }]);
  });

  it('derives stock_shortage for a delivering order whose device is no longer available, until it ships', () => {
    const gone = [{ productId: 'dev_1', serialNumber: 'SN-1', status: 'Assigned' }];
    const sla = computeSla(order({ status: 'Pending', unavailableDeliverDevices: gone }), [], at(0.5));
    expect(sla.status).toBe('at_risk');
    expect(sla.reasons).toEqual([{ reason: 'stock_shortage', since: null, note: expect.stringContaining('SN-1 (Assigned)'), origin: 'derived' }]);
    expect(computeSla(order({ status: 'Shipped', unavailableDeliverDevices: gone }), [], at(0.5)).reasons).toEqual([]);
    const heldAfterShipping = [change(0.1, 'In Progress', 'Shipped'), change(0.2, 'Shipped', 'On Hold')];
    expect(computeSla(order({ status: 'On Hold', unavailableDeliverDevices: gone }), heldAfterShipping, at(0.5)).reasons).toEqual([]);
  });

  it('ignores a pickup window without a usable end', () => {
    const sla = computeSla(order({ orderType: 'Collection', pickupWindow: { end: 'soon' } }), [], at(1));
    expect(sla.reasons).toEqual([]);
  });
});
