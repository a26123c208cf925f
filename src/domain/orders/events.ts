import { z } from 'zod';
import type { Principal } from '../../access/principal.js';
import type { DomainDeps } from '../deps.js';
import type { Queryable } from '../../store/db.js';
import { newId } from '../../store/ids.js';
import { sql } from '../../store/sql.js';
import { badRequest, conflict, forbidden, notFound, unprocessable } from '../../kit/errors.js';
import type { DeviceStatus } from '../inventory.js';
import {
  DISPOSITION_ACTIONS,
  FINAL_STATES,
  SUB_ORDER_TYPES,
  TRANSITIONS,
  canTransition,
  type AnyOrderType,
  type DelayReason,
  type DeviceRequestStatus,
  type DeviceRole,
  type DispositionAction,
  type OrderState,
  type ShipmentDirection,
} from './model.js';
import { EVENT_COLUMNS, EVENT_ORDER, type HistoryEvent } from './read.js';

/*
 * The logistics side of orders: fulfilment and courier events posted against an order. Each one
 * is appended to the event log (source 'logistics'); status changes move the order through
 * TRANSITIONS and apply their effects on the devices in the same transaction.
 */

/**
 * Who may post logistics events: the companies whose orders they move. Over REST that is an
 * admin (their companies); at the host it is the operator running `svc-server orders` (all).
 */
export interface LogisticsActor {
  companyIds: readonly string[];
}

export function logisticsActor(p: Principal): LogisticsActor {
  if (p.role !== 'admin') {
    throw forbidden('logistics_only', 'Only the logistics side (an admin, or the operator with svc-server orders) posts order events');
  }
  return { companyIds: p.companyIds };
}

/** The operator at the host reaches every company's orders. */
export async function operatorActor(db: Queryable): Promise<LogisticsActor> {
  const companies = await db.query<{ id: string }>(sql`SELECT id FROM companies ORDER BY id`);
  return { companyIds: companies.map((c) => c.id) };
}

interface Timing {
  /** ISO 8601; defaults to now, and may not lie in the future. */
  occurredAt?: string | undefined;
}

export type OrderEventInput = Timing &
  (
    | { type: 'status'; status: OrderState; note?: string | undefined }
    | { type: 'delay'; reason: DelayReason; note?: string | undefined }
    | { type: 'delay_resolved'; reason: DelayReason }
    | { type: 'shipment'; carrier: string; trackingNumber: string; direction: ShipmentDirection }
    | { type: 'device'; productId: string; status: DeviceRequestStatus; note?: string | undefined }
  );

interface LockedOrder {
  id: string;
  orderType: AnyOrderType;
  status: OrderState;
  employeeId: string | null;
  dispositions: unknown;
  createdAt: string;
  /** When the status last changed (creation counts); a status change may not be dated earlier. */
  statusSince: string;
}

/** One device's status and holder before and after an order moved it: the log keeps these so a cancel can undo them. */
export interface DeviceEffect {
  productId: string;
  statusFrom: DeviceStatus;
  statusTo: DeviceStatus;
  employeeIdFrom: string | null;
  employeeIdTo: string | null;
}

interface NewEvent {
  type: string;
  statusFrom?: OrderState;
  statusTo?: OrderState;
  deviceId?: string;
  reason?: DelayReason;
  note?: string | undefined;
  data?: Record<string, unknown>;
}

/** One event being applied: the locked order, when the event happened and when it is recorded. */
interface Posting {
  tx: Queryable;
  order: LockedOrder;
  at: Date;
  now: Date;
}

export interface RecordedEvent {
  orderId: string;
  status: OrderState;
  event: HistoryEvent;
}

/** Locks the order (events on one order apply one at a time); 404 outside the actor's companies. */
async function lockOrder(tx: Queryable, actor: LogisticsActor, id: string): Promise<LockedOrder> {
  const [order] = await tx.query<LockedOrder>(sql`
    SELECT o.id, o.order_type AS "orderType", o.status, o.employee_id AS "employeeId", o.dispositions,
      o.created_at AS "createdAt",
      greatest(o.created_at, (SELECT max(ev.occurred_at) FROM order_events ev WHERE ev.order_id = o.id AND ev.status_to IS NOT NULL))
        AS "statusSince"
    FROM orders o WHERE o.id = ${id} AND o.company_id = ANY(${[...actor.companyIds]}::text[])
    FOR UPDATE OF o`);
  if (!order) throw notFound('Order', id);
  return order;
}

function occurredAtProblem(rule: string, message: string) {
  return badRequest('validation_failed', `Invalid input to record_order_event: occurredAt: ${message}`, [
    { field: 'occurredAt', rule, message },
  ]);
}

/**
 * When the event happened: now by default; never in the future, never before the order was
 * created, and for a status change never before the previous one (the log stays a valid path).
 */
function resolveOccurredAt(given: string | undefined, now: Date, order: LockedOrder, isStatusChange: boolean): Date {
  const at = given === undefined ? now : new Date(given);
  if (at > now) throw occurredAtProblem('not_in_future', `must not lie in the future (now is ${now.toISOString()})`);
  const earliest = isStatusChange ? order.statusSince : order.createdAt;
  if (at < new Date(earliest)) {
    const what = isStatusChange ? 'the order’s last status change' : 'the order was created';
    throw occurredAtProblem(isStatusChange ? 'not_before_last_status_change' : 'not_before_order_created', `must not be before ${what} (${earliest})`);
  }
  return at;
}

async function appendEvent({ tx, order, at, now }: Posting, e: NewEvent): Promise<HistoryEvent> {
  const [event] = await tx.query<HistoryEvent>(sql`
    INSERT INTO order_events AS ev (id, order_id, type, status_from, status_to, device_id, reason, note, source, occurred_at, recorded_at, data)
    VALUES (${newId('evt')}, ${order.id}, ${e.type}, ${e.statusFrom ?? null}, ${e.statusTo ?? null}, ${e.deviceId ?? null},
      ${e.reason ?? null}, ${e.note ?? null}, 'logistics', ${at}, ${now}, ${JSON.stringify(e.data ?? {})}::jsonb)
    RETURNING ${EVENT_COLUMNS}`);
  return event!;
}

interface OrderDevice {
  id: string;
  role: DeviceRole;
  status: DeviceStatus;
  employeeId: string | null;
}

async function lockDevices(tx: Queryable, orderId: string): Promise<OrderDevice[]> {
  return tx.query<OrderDevice>(sql`
    SELECT d.id, od.role, d.status, d.employee_id AS "employeeId"
    FROM order_devices od JOIN devices d ON d.id = od.device_id
    WHERE od.order_id = ${orderId} ORDER BY d.id FOR UPDATE OF d`);
}

/** A device's target state; `employeeId` undefined keeps the holder. */
interface DeviceTarget {
  status: DeviceStatus;
  employeeId?: string | null;
}

/** Moves each device to its target (skipping those already there) and reports what changed. */
async function moveDevices({ tx, at, now }: Posting, moves: Array<[OrderDevice, DeviceTarget]>): Promise<DeviceEffect[]> {
  const effects: DeviceEffect[] = [];
  for (const [device, target] of moves) {
    const employeeIdTo = target.employeeId === undefined ? device.employeeId : target.employeeId;
    if (device.status === target.status && device.employeeId === employeeIdTo) continue;
    const assignedAt = employeeIdTo === device.employeeId ? sql`assigned_at` : employeeIdTo === null ? null : at;
    await tx.query(sql`UPDATE devices SET status = ${target.status}, employee_id = ${employeeIdTo},
      assigned_at = ${assignedAt}, updated_at = ${now} WHERE id = ${device.id}`);
    effects.push({ productId: device.id, statusFrom: device.status, statusTo: target.status, employeeIdFrom: device.employeeId, employeeIdTo });
  }
  return effects;
}

const StoredDispositions = z.array(z.object({ productId: z.string(), action: z.enum(DISPOSITION_ACTIONS) }));

/** Where a returned device ends up: kept by the employee, retired, or back in stock (the default). */
function returnedTarget(action: DispositionAction | undefined, device: OrderDevice): DeviceTarget {
  if (action === 'keep') return { status: device.employeeId ? 'Assigned' : 'Available' };
  if (action === 'recycle') return { status: 'Retired', employeeId: null };
  return { status: 'Available', employeeId: null };
}

/** The devices arrive: delivered ones go to the employee (or stock), returned ones per disposition, serviced ones back. */
function settledTarget(order: LockedOrder, device: OrderDevice): DeviceTarget {
  switch (device.role) {
    case 'deliver':
      return order.employeeId ? { status: 'Assigned', employeeId: order.employeeId } : { status: 'Available', employeeId: null };
    case 'return': {
      const stored = StoredDispositions.safeParse(order.dispositions);
      const action = stored.success ? stored.data.find((d) => d.productId === device.id)?.action : undefined;
      return returnedTarget(action, device);
    }
    case 'service':
      return { status: device.employeeId ? 'Assigned' : 'Available' };
  }
}

/** Each device as it was before this order first moved it, from the effects in the log. */
async function statesBeforeOrder(tx: Queryable, orderId: string): Promise<Map<string, DeviceTarget>> {
  const rows = await tx.query<{ effects: DeviceEffect[] }>(sql`
    SELECT ev.data -> 'deviceEffects' AS effects FROM order_events ev
    WHERE ev.order_id = ${orderId} AND ev.data ? 'deviceEffects' ORDER BY ${EVENT_ORDER}`);
  const before = new Map<string, DeviceTarget>();
  for (const effect of rows.flatMap((r) => r.effects)) {
    if (!before.has(effect.productId)) before.set(effect.productId, { status: effect.statusFrom, employeeId: effect.employeeIdFrom });
  }
  return before;
}

async function wasDelivered(tx: Queryable, orderId: string): Promise<boolean> {
  const rows = await tx.query(sql`SELECT 1 FROM order_events WHERE order_id = ${orderId} AND status_to = 'Delivered' LIMIT 1`);
  return rows.length > 0;
}

/**
 * What a status change does to the order's devices:
 * - In Progress: devices sent for service go In Repair;
 * - Shipped: devices being delivered go In Transit;
 * - Delivered, or Completed without a delivery first (a hand-over in person): every device settles;
 * - Cancelled: every device returns to its state before the order.
 */
async function deviceEffectsOf(posting: Posting, to: OrderState): Promise<DeviceEffect[]> {
  const { tx, order } = posting;
  // A sub-order (a charger for a device) ships something else: its parent order moves the device.
  if (SUB_ORDER_TYPES.some((type) => type === order.orderType)) return [];
  const devices = await lockDevices(tx, order.id);
  const moves = (target: (device: OrderDevice) => DeviceTarget | undefined) =>
    devices.flatMap((device): Array<[OrderDevice, DeviceTarget]> => {
      const t = target(device);
      return t ? [[device, t]] : [];
    });
  switch (to) {
    case 'In Progress':
      return moveDevices(posting, moves((d) => (d.role === 'service' ? { status: 'In Repair' } : undefined)));
    case 'Shipped':
      return moveDevices(posting, moves((d) => (d.role === 'deliver' ? { status: 'In Transit' } : undefined)));
    case 'Delivered':
      return moveDevices(posting, moves((d) => settledTarget(order, d)));
    case 'Completed':
      return (await wasDelivered(tx, order.id)) ? [] : moveDevices(posting, moves((d) => settledTarget(order, d)));
    case 'Cancelled': {
      const before = await statesBeforeOrder(tx, order.id);
      return moveDevices(posting, moves((d) => before.get(d.id)));
    }
    default:
      return [];
  }
}

async function changeStatus(posting: Posting, to: OrderState, note: string | undefined) {
  const { tx, order, at, now } = posting;
  if (!canTransition(order.status, to)) {
    const allowed = TRANSITIONS[order.status];
    throw conflict(
      'invalid_transition',
      `An order in ${order.status} cannot move to ${to}; allowed next states: ${allowed.length ? allowed.join(', ') : 'none (final state)'}`,
      { from: order.status, to, allowed },
    );
  }
  const effects = await deviceEffectsOf(posting, to);
  const closes = FINAL_STATES.includes(to);
  if (closes) await tx.query(sql`DELETE FROM device_holds WHERE order_id = ${order.id}`);
  await tx.query(sql`UPDATE orders SET status = ${to}, updated_at = ${now}, closed_at = ${closes ? at : null} WHERE id = ${order.id}`);
  return appendEvent(posting, {
    type: 'status_changed',
    statusFrom: order.status,
    statusTo: to,
    note,
    data: effects.length ? { deviceEffects: effects } : {},
  });
}

function refuseIfClosed(order: LockedOrder, what: string) {
  if (FINAL_STATES.includes(order.status)) {
    throw unprocessable('order_closed', `Order ${order.id} is ${order.status}: no ${what} can be recorded on a closed order`, {
      status: order.status,
    });
  }
}

/** Reasons recorded as delays and not resolved since, in log order. */
async function openDelayReasons(tx: Queryable, orderId: string): Promise<Set<string>> {
  const rows = await tx.query<{ type: string; reason: string }>(sql`
    SELECT ev.type, ev.reason FROM order_events ev
    WHERE ev.order_id = ${orderId} AND ev.type IN ('delay', 'delay_resolved') ORDER BY ${EVENT_ORDER}`);
  const open = new Set<string>();
  for (const row of rows) {
    if (row.type === 'delay') open.add(row.reason);
    else open.delete(row.reason);
  }
  return open;
}

async function recordDeviceEvent(posting: Posting, input: Extract<OrderEventInput, { type: 'device' }>) {
  const { tx, order } = posting;
  const updated = await tx.query(sql`
    UPDATE order_devices SET status = ${input.status} WHERE order_id = ${order.id} AND device_id = ${input.productId} RETURNING device_id`);
  if (updated.length === 0) {
    throw unprocessable('device_not_on_order', `Device ${input.productId} is not on order ${order.id}`, [
      { field: 'productId', rule: 'on_order', message: 'must be a device of this order (see productIds of get_order)' },
    ]);
  }
  return appendEvent(posting, { type: 'device', deviceId: input.productId, note: input.note, data: { status: input.status } });
}

async function recordShipment(posting: Posting, input: Extract<OrderEventInput, { type: 'shipment' }>) {
  const { tx, order, at } = posting;
  refuseIfClosed(order, 'shipment');
  const [existing] = await tx.query(sql`
    SELECT 1 FROM shipments WHERE order_id = ${order.id} AND carrier = ${input.carrier} AND tracking_number = ${input.trackingNumber}`);
  if (existing) {
    throw conflict('shipment_exists', `Order ${order.id} already has ${input.carrier} shipment ${input.trackingNumber}`, [
      { field: 'trackingNumber', rule: 'unique', message: 'a shipment is recorded once per order' },
    ]);
  }
  const shipmentId = newId('shp');
  await tx.query(sql`INSERT INTO shipments (id, order_id, carrier, tracking_number, direction, created_at)
    VALUES (${shipmentId}, ${order.id}, ${input.carrier}, ${input.trackingNumber}, ${input.direction}, ${at})`);
  const { carrier, trackingNumber, direction } = input;
  return appendEvent(posting, { type: 'shipment', data: { shipmentId, carrier, trackingNumber, direction } });
}

async function applyEvent(posting: Posting, input: OrderEventInput): Promise<HistoryEvent> {
  const { tx, order } = posting;
  switch (input.type) {
    case 'status':
      return changeStatus(posting, input.status, input.note);
    case 'delay':
      refuseIfClosed(order, 'delay');
      return appendEvent(posting, { type: 'delay', reason: input.reason, note: input.note });
    case 'delay_resolved':
      if (!(await openDelayReasons(tx, order.id)).has(input.reason)) {
        throw unprocessable('no_open_delay', `Order ${order.id} has no open ${input.reason} delay to resolve`, [
          { field: 'reason', rule: 'open_delay', message: 'must be the reason of a delay recorded and not yet resolved' },
        ]);
      }
      return appendEvent(posting, { type: 'delay_resolved', reason: input.reason });
    case 'shipment':
      return recordShipment(posting, input);
    case 'device':
      return recordDeviceEvent(posting, input);
  }
}

/**
 * Posts one fulfilment or courier event on an order, in one transaction. REST callers pass
 * logisticsActor(principal), the CLI operatorActor(db).
 */
export async function recordOrderEvent(core: DomainDeps, actor: LogisticsActor, orderId: string, input: OrderEventInput): Promise<RecordedEvent> {
  return core.db.transaction(async (tx) => {
    const order = await lockOrder(tx, actor, orderId);
    const now = core.now();
    const at = resolveOccurredAt(input.occurredAt, now, order, input.type === 'status');
    const event = await applyEvent({ tx, order, at, now }, input);
    if (event.type !== 'status_changed') await tx.query(sql`UPDATE orders SET updated_at = ${now} WHERE id = ${order.id}`);
    return { orderId, status: event.statusTo ?? order.status, event };
  });
}
