import type { Principal } from '../../access/principal.js';
import { deviceScope } from '../../access/scope.js';
import type { Queryable } from '../../store/db.js';
import { sql, type Sql } from '../../store/sql.js';

/*
 * An order shows a device only to a reader who may read that device (get_product): a manager
 * sees an order of one of their employees, but not the stock it delivers from outside their
 * regions; an employee sees their offboarding, but not the laptop once it is back in stock.
 * Such a device stays on the order as an entry whose productId, serialNumber and productType are
 * null, marked `hidden: true`; its role, status and disposition are the order's and stay.
 */

/**
 * An admin reads every device of the companies whose orders they read, and an order's devices are
 * in its company: nothing to hide, so their pages keep the statement (and plan) without the join.
 */
const seesEveryDevice = (p: Principal) => p.role === 'admin';

/** The ids of the devices a reader may read among those of the order `o` (list_orders, sub-orders). */
export const visibleProductIds = (p: Principal): Sql =>
  seesEveryDevice(p)
    ? sql`ARRAY(SELECT od.device_id FROM order_devices od WHERE od.order_id = o.id ORDER BY od.device_id)`
    : sql`ARRAY(SELECT od.device_id FROM order_devices od JOIN devices d ON d.id = od.device_id
    WHERE od.order_id = o.id AND ${deviceScope(p, p.companyIds)} ORDER BY od.device_id)`;

const NONE: ReadonlySet<string> = new Set();

/** The devices of an order and of its sub-orders that the reader may not read. */
export async function hiddenDevices(db: Queryable, p: Principal, orderId: string): Promise<ReadonlySet<string>> {
  if (seesEveryDevice(p)) return NONE;
  const rows = await db.query<{ id: string }>(sql`
    SELECT DISTINCT d.id FROM order_devices od JOIN devices d ON d.id = od.device_id
    WHERE (od.order_id = ${orderId} OR od.order_id IN (SELECT s.id FROM orders s WHERE s.parent_id = ${orderId}))
      AND (${deviceScope(p, p.companyIds)}) IS NOT TRUE`);
  return new Set(rows.map((row) => row.id));
}

const IDENTIFYING = ['productId', 'serialNumber', 'productType'] as const;
type Identifying = (typeof IDENTIFYING)[number];

/** An entry about a device as the reader gets it: as stored, or with what identifies the device nulled. */
export type Shown<T> = T | ({ [K in keyof T]: K extends Identifying ? null : T[K] } & { hidden: true });

/** The entry as is when the reader may read its device (or it names none), else redacted. */
export function shown<T extends { productId: string | null }>(entry: T, hidden: ReadonlySet<string>): Shown<T> {
  if (entry.productId === null || !hidden.has(entry.productId)) return entry;
  const redacted: Record<string, unknown> = { ...entry, hidden: true };
  for (const key of IDENTIFYING) if (key in entry) redacted[key] = null;
  return redacted as Shown<T>;
}

const isDeviceEntry = (value: unknown): value is { productId: string } =>
  typeof value === 'object' && value !== null && typeof (value as { productId?: unknown }).productId === 'string';

/** Stored JSON listing devices (dispositions, the device effects of a status change), redacted entry by entry. */
export function shownJson(value: unknown, hidden: ReadonlySet<string>): unknown {
  if (hidden.size === 0 || !Array.isArray(value)) return value;
  return value.map((entry: unknown) => (isDeviceEntry(entry) ? shown(entry, hidden) : entry));
}
