import type { Principal } from '../../access/principal.js';
import { orderScope } from '../../access/scope.js';
import type { Queryable } from '../../store/db.js';
import { sql } from '../../store/sql.js';
import { notFound } from '../../kit/errors.js';
import type { AnyOrderType, DeviceRole, OrderState } from './model.js';
import { hiddenDevices, shown, visibleProductIds, type Shown } from './device-scope.js';
import type { Disposition, LegalHold, PickupWindow, PurchasedItem } from './rules.js';

export interface OrderRecord {
  id: string;
  companyId: string;
  orderType: AnyOrderType;
  status: OrderState;
  employeeId: string | null;
  employee: { id: string; displayName: string; email: string } | null;
  /** The order's devices the reader may read; sub-orders' likewise. */
  productIds: string[];
  country: string | null;
  parentId: string | null;
  parent: { id: string; orderType: AnyOrderType; status: OrderState } | null;
  subOrders: Array<{ id: string; orderType: AnyOrderType; status: OrderState; productIds: string[]; createdAt: string }>;
  /** Every device of the order; one the reader may not read (get_product) is shown hidden. */
  deviceRequests: Array<Shown<DeviceRequest>>;
  /** Each returned device's disposition, the device shown hidden like in deviceRequests. */
  dispositions: Array<Shown<Disposition>> | null;
  legalHold: LegalHold | null;
  pickupWindow: PickupWindow | null;
  /** What a purchase order bought. */
  items: PurchasedItem[] | null;
  shipments: Array<{ id: string; carrier: string; trackingNumber: string; direction: string; createdAt: string }>;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}

interface DeviceRequest {
  productId: string;
  serialNumber: string;
  productType: string;
  role: DeviceRole;
  status: string;
}

type OrderRow = Omit<OrderRecord, 'employee' | 'parent' | 'subOrders' | 'deviceRequests' | 'shipments' | 'productIds' | 'dispositions'> & {
  dispositions: Disposition[] | null;
  employeeName: string | null;
  employeeEmail: string | null;
};

/**
 * One order as get_order returns it: the order with its parent, sub-orders, device requests and
 * shipments. Scoped like every read: an order the caller cannot see is a 404.
 */
export async function loadOrder(db: Queryable, p: Principal, id: string): Promise<OrderRecord> {
  const [row] = await db.query<OrderRow>(sql`
    SELECT o.id, o.company_id AS "companyId", o.order_type AS "orderType", o.status, o.employee_id AS "employeeId",
      e.display_name AS "employeeName", e.email AS "employeeEmail", o.country, o.parent_id AS "parentId",
      o.dispositions, o.legal_hold AS "legalHold", o.pickup_window AS "pickupWindow", o.items,
      o.created_at AS "createdAt", o.updated_at AS "updatedAt", o.closed_at AS "closedAt"
    FROM orders o LEFT JOIN employees e ON e.id = o.employee_id
    WHERE o.id = ${id} AND ${orderScope(p, p.companyIds)}`);
  if (!row) throw notFound('Order', id);
  const [devices, subOrders, shipments, parents, hidden] = await Promise.all([
    db.query<DeviceRequest>(sql`
      SELECT d.id AS "productId", d.serial_number AS "serialNumber", d.product_type AS "productType", od.role, od.status
      FROM order_devices od JOIN devices d ON d.id = od.device_id WHERE od.order_id = ${id} ORDER BY d.id`),
    db.query<OrderRecord['subOrders'][number]>(sql`
      SELECT o.id, o.order_type AS "orderType", o.status, ${visibleProductIds(p)} AS "productIds", o.created_at AS "createdAt"
      FROM orders o WHERE o.parent_id = ${id} ORDER BY o.id`),
    db.query<OrderRecord['shipments'][number]>(sql`
      SELECT id, carrier, tracking_number AS "trackingNumber", direction, created_at AS "createdAt"
      FROM shipments WHERE order_id = ${id} ORDER BY created_at, id`),
    row.parentId
      ? db.query<NonNullable<OrderRecord['parent']>>(sql`SELECT id, order_type AS "orderType", status FROM orders WHERE id = ${row.parentId}`)
      : Promise.resolve([]),
    hiddenDevices(db, p, id),
  ]);
  const { employeeName, employeeEmail, ...order } = row;
  return {
    ...order,
    employee: order.employeeId ? { id: order.employeeId, displayName: employeeName ?? '', email: employeeEmail ?? '' } : null,
    productIds: devices.filter((d) => !hidden.has(d.productId)).map((d) => d.productId),
    parent: parents[0] ?? null,
    subOrders,
    deviceRequests: devices.map((d) => shown(d, hidden)),
    dispositions: order.dispositions?.map((d) => shown(d, hidden)) ?? null,
    shipments,
  };
}
