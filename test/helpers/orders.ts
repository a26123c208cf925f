import type { AnyOrderType, DeviceRole, OrderState } from '../../src/domain/orders/model.js';
import { FINAL_STATES } from '../../src/domain/orders/model.js';
import { newId } from '../../src/store/ids.js';
import { sql } from '../../src/store/sql.js';
import type { TestApp } from './harness.js';

/*
 * Orders and their history written straight into the tables, at chosen times: tests of the
 * read side (SLA, tracking) need orders in given states without going through the write path.
 */

export const DAY_MS = 86_400_000;
export const daysAfter = (start: Date, days: number) => new Date(start.getTime() + days * DAY_MS);

export interface OrderSeed {
  orderType: AnyOrderType;
  createdAt: Date;
  employeeId?: string | null;
  companyId?: string;
  country?: string | null;
  status?: OrderState;
  closedAt?: Date | null;
  pickupWindow?: { start: string; end: string } | null;
  devices?: Array<{ deviceId: string; role: DeviceRole }>;
}

/** Inserts an order with its device requests and its `created` event. */
export async function insertOrder(t: TestApp, seed: OrderSeed): Promise<string> {
  const id = newId('ord');
  const status = seed.status ?? 'Pending';
  await t.core.db.query(sql`
    INSERT INTO orders (id, company_id, order_type, status, employee_id, country, pickup_window, created_at, updated_at, closed_at)
    VALUES (${id}, ${seed.companyId ?? t.demo.companies.acme}, ${seed.orderType}, ${status}, ${seed.employeeId ?? null},
      ${seed.country ?? null}, ${seed.pickupWindow ? JSON.stringify(seed.pickupWindow) : null}::jsonb,
      ${seed.createdAt}, ${seed.createdAt}, ${seed.closedAt ?? null})`);
  for (const device of seed.devices ?? []) {
    await t.core.db.query(sql`INSERT INTO order_devices (order_id, device_id, role, status)
      VALUES (${id}, ${device.deviceId}, ${device.role}, 'requested')`);
  }
  await insertEvent(t, id, { type: 'created', statusTo: 'Pending', occurredAt: seed.createdAt });
  return id;
}

export interface EventSeed {
  type: string;
  occurredAt: Date;
  statusFrom?: string;
  statusTo?: string;
  reason?: string;
  note?: string;
  deviceId?: string;
  data?: Record<string, unknown>;
}

export async function insertEvent(t: TestApp, orderId: string, e: EventSeed): Promise<void> {
  await t.core.db.query(sql`
    INSERT INTO order_events (id, order_id, type, status_from, status_to, device_id, reason, note, source, occurred_at, data)
    VALUES (${newId('evt')}, ${orderId}, ${e.type}, ${e.statusFrom ?? null}, ${e.statusTo ?? null}, ${e.deviceId ?? null},
      ${e.reason ?? null}, ${e.note ?? null}, 'logistics', ${e.occurredAt}, ${JSON.stringify(e.data ?? {})}::jsonb)`);
}

/** Moves the order to `to` at `at`, with its status_changed event (and closed_at when final). */
export async function moveOrder(t: TestApp, orderId: string, to: OrderState, at: Date): Promise<void> {
  const [row] = await t.core.db.query<{ status: string }>(sql`SELECT status FROM orders WHERE id = ${orderId}`);
  await insertEvent(t, orderId, { type: 'status_changed', statusFrom: row!.status, statusTo: to, occurredAt: at });
  const closedAt = FINAL_STATES.includes(to) ? at : null;
  await t.core.db.query(sql`UPDATE orders SET status = ${to}, updated_at = ${at}, closed_at = ${closedAt} WHERE id = ${orderId}`);
}

/** Registers a shipment and its `shipment` event. */
export async function insertShipment(
  t: TestApp,
  orderId: string,
  s: { carrier: string; trackingNumber: string; direction?: string; createdAt: Date },
): Promise<string> {
  const id = newId('shp');
  const direction = s.direction ?? 'outbound';
  await t.core.db.query(sql`INSERT INTO shipments (id, order_id, carrier, tracking_number, direction, created_at)
    VALUES (${id}, ${orderId}, ${s.carrier}, ${s.trackingNumber}, ${direction}, ${s.createdAt})`);
  await insertEvent(t, orderId, {
    type: 'shipment',
    occurredAt: s.createdAt,
    data: { carrier: s.carrier, trackingNumber: s.trackingNumber, direction },
  });
  return id;
}
