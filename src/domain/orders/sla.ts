import { z } from 'zod';
import type { Principal } from '../../access/principal.js';
import { orderScope } from '../../access/scope.js';
import type { Queryable } from '../../store/db.js';
import { sql } from '../../store/sql.js';
import { notFound } from '../../kit/errors.js';
import { EVENT_ORDER } from './read.js';
import { hiddenDevices, shown, type Shown } from './device-scope.js';
import { FINAL_STATES, SLA_AT_RISK_SHARE, slaTargetDays, type AnyOrderType, type OrderState, type SlaStatus } from './model.js';

/**
 * The SLA of one order, computed from its timestamps and event log against a given clock.
 * `computeSla` is pure; `getOrderSla` loads its inputs.
 */


/** Return-type orders wait for a pickup; delivering orders need their device in stock. */
const PICKUP_ORDER_TYPES: readonly AnyOrderType[] = ['Offboarding', 'Collection', 'Swap from Inventory'];
const DELIVERING_ORDER_TYPES: readonly AnyOrderType[] = ['Deployment', 'Swap from Inventory'];
const BEFORE_PICKUP: readonly OrderState[] = ['Pending', 'In Progress'];
const BEFORE_SHIPPING: readonly OrderState[] = ['Pending', 'In Progress', 'On Hold'];

export interface SlaOrder {
  id: string;
  orderType: AnyOrderType;
  country: string | null;
  status: OrderState;
  createdAt: string;
  closedAt: string | null;
  /** As stored; only a parsable `end` is used. */
  pickupWindow: unknown;
  /** Devices the order is to deliver that are no longer Available; those the reader may not read, hidden. */
  unavailableDeliverDevices: Array<Shown<{ productId: string; serialNumber: string; status: string }>>;
}

export interface SlaEvent {
  type: string;
  statusFrom: string | null;
  statusTo: string | null;
  reason: string | null;
  note: string | null;
  /** A device event's reported status (`picked_up`, …). */
  deviceStatus: string | null;
  occurredAt: string;
}

export interface SlaReason {
  reason: string;
  /** Start of the delay; null for a derived reason whose start is not recorded. */
  since: string | null;
  note: string | null;
  /** `event`: a recorded, unresolved delay; `derived`: inferred from the order's current state. */
  origin: 'event' | 'derived';
}

export interface SlaResult {
  orderId: string;
  orderType: AnyOrderType;
  country: string | null;
  orderStatus: OrderState;
  status: SlaStatus;
  targetDays: number;
  createdAt: string;
  closedAt: string | null;
  dueAt: string;
  elapsedDays: number;
  pausedDays: number;
  remainingDays: number;
  reasons: SlaReason[];
}

const DAY_MS = 86_400_000;
const time = (iso: string) => new Date(iso).getTime();
const round1 = (n: number) => Math.round(n * 10) / 10;

/** Time spent On Hold between `start` and `end`: from each change into On Hold to the next change out of it. */
function heldMs(statusChanges: readonly SlaEvent[], start: number, end: number): number {
  let total = 0;
  let heldSince: number | null = null;
  for (const change of statusChanges) {
    const at = Math.min(Math.max(time(change.occurredAt), start), end);
    if (change.statusTo === 'On Hold') heldSince ??= at;
    else if (heldSince !== null) {
      total += at - heldSince;
      heldSince = null;
    }
  }
  return heldSince === null ? total : total + (end - heldSince);
}

/** Recorded delays without a later delay_resolved of the same reason; a repeat keeps the first `since` and the latest note. */
function openDelays(events: readonly SlaEvent[]): SlaReason[] {
  const open = new Map<string, SlaReason>();
  for (const event of events) {
    if (!event.reason) continue;
    if (event.type === 'delay') {
      const since = open.get(event.reason)?.since ?? event.occurredAt;
      open.set(event.reason, { reason: event.reason, since, note: event.note, origin: 'event' });
    } else if (event.type === 'delay_resolved') {
      open.delete(event.reason);
    }
  }
  return [...open.values()];
}

const PickupWindowEnd = z.object({ end: z.string() });

/** Reasons the order's current state implies, whether or not anyone recorded a delay. */
function derivedReasons(order: SlaOrder, events: readonly SlaEvent[], now: number): SlaReason[] {
  const reasons: SlaReason[] = [];
  const window = PickupWindowEnd.safeParse(order.pickupWindow);
  const pickupEnd = window.success ? time(window.data.end) : NaN;
  const pickedUp = events.some((e) => e.type === 'device' && e.deviceStatus === 'picked_up');
  if (PICKUP_ORDER_TYPES.includes(order.orderType) && BEFORE_PICKUP.includes(order.status) && !pickedUp && now > pickupEnd) {
    reasons.push({
      reason: 'awaiting_pickup',
      since: new Date(pickupEnd).toISOString(),
      note: 'The pickup window has ended and the devices have not been picked up',
      origin: 'derived',
    });
  }
  // Shipping moves the devices on (In Transit), and an order may go On Hold after that.
  const shipped = events.some((e) => e.type === 'status_changed' && e.statusTo === 'Shipped');
  if (DELIVERING_ORDER_TYPES.includes(order.orderType) && BEFORE_SHIPPING.includes(order.status) && !shipped) {
    const missing = order.unavailableDeliverDevices;
    if (missing.length > 0) {
      reasons.push({
        reason: 'stock_shortage',
        since: null,
        note: `No longer available to deliver: ${missing.map((d) => `${d.serialNumber ?? 'a device outside your scope'} (${d.status})`).join(', ')}`,
        origin: 'derived',
      });
    }
  }
  return reasons;
}

/**
 * The SLA answer. The clock runs from creation to closure (or `now` while open) and stops while
 * the order is On Hold, which moves `dueAt` later. Events after that end are ignored.
 */
export function computeSla(order: SlaOrder, events: readonly SlaEvent[], now: Date): SlaResult {
  const created = time(order.createdAt);
  const isFinal = FINAL_STATES.includes(order.status);
  const end = isFinal && order.closedAt ? time(order.closedAt) : now.getTime();
  const relevant = events
    .filter((e) => time(e.occurredAt) <= end)
    .sort((a, b) => time(a.occurredAt) - time(b.occurredAt));
  const targetDays = slaTargetDays(order.orderType, order.country);
  const paused = heldMs(relevant.filter((e) => e.type === 'status_changed'), created, end);
  const dueAt = created + targetDays * DAY_MS + paused;
  const elapsed = Math.max(0, end - created - paused);

  const recorded = openDelays(relevant);
  const derived = isFinal ? [] : derivedReasons(order, relevant, end).filter((d) => !recorded.some((r) => r.reason === d.reason));
  const reasons = [...recorded, ...derived];

  let status: SlaStatus;
  if (order.status === 'Cancelled') status = 'cancelled';
  else if (order.status === 'Completed') status = end <= dueAt ? 'met' : 'missed';
  else if (end > dueAt) status = 'delayed';
  else if (elapsed >= SLA_AT_RISK_SHARE * targetDays * DAY_MS || reasons.length > 0) status = 'at_risk';
  else status = 'on_track';

  const elapsedDays = round1(elapsed / DAY_MS);
  return {
    orderId: order.id,
    orderType: order.orderType,
    country: order.country,
    orderStatus: order.status,
    status,
    targetDays,
    createdAt: order.createdAt,
    closedAt: order.closedAt,
    dueAt: new Date(dueAt).toISOString(),
    elapsedDays,
    pausedDays: round1(paused / DAY_MS),
    remainingDays: round1(targetDays - elapsedDays),
    reasons,
  };
}

export async function getOrderSla(db: Queryable, p: Principal, id: string, now: Date): Promise<SlaResult> {
  const [order] = await db.query<Omit<SlaOrder, 'unavailableDeliverDevices'>>(sql`
    SELECT o.id, o.order_type AS "orderType", o.country, o.status, o.created_at AS "createdAt",
      o.closed_at AS "closedAt", o.pickup_window AS "pickupWindow"
    FROM orders o WHERE o.id = ${id} AND ${orderScope(p, p.companyIds)}`);
  if (!order) throw notFound('Order', id);
  const [events, unavailable, hidden] = await Promise.all([
    db.query<SlaEvent>(sql`
      SELECT ev.type, ev.status_from AS "statusFrom", ev.status_to AS "statusTo", ev.reason, ev.note,
        CASE WHEN ev.type = 'device' THEN ev.data ->> 'status' END AS "deviceStatus", ev.occurred_at AS "occurredAt"
      FROM order_events ev WHERE ev.order_id = ${id} ORDER BY ${EVENT_ORDER}`),
    db.query<{ productId: string; serialNumber: string; status: string }>(sql`
      SELECT d.id AS "productId", d.serial_number AS "serialNumber", d.status
      FROM order_devices od JOIN devices d ON d.id = od.device_id
      WHERE od.order_id = ${id} AND od.role = 'deliver' AND d.status <> 'Available' ORDER BY d.id`),
    hiddenDevices(db, p, id),
  ]);
  return computeSla({ ...order, unavailableDeliverDevices: unavailable.map((d) => shown(d, hidden)) }, events, now);
}
