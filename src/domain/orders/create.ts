import type { Principal } from '../../access/principal.js';
import { deviceScope, orderScope } from '../../access/scope.js';
import type { DomainDeps } from '../deps.js';
import type { Queryable } from '../../store/db.js';
import { newId } from '../../store/ids.js';
import { join, sql } from '../../store/sql.js';
import { badRequest, conflict, notFound, unprocessable } from '../../kit/errors.js';
import { FINAL_STATES, type AnyOrderType, type OrderState } from './model.js';
import { loadOrder, type OrderRecord } from './record.js';
import {
  checkDeviceOrder,
  checkPurchaseOrder,
  type DeviceOrderInput,
  type PurchaseOrderInput,
  type Violation,
} from './rules.js';

/** Every order starts here; the logistics side moves it on. */
const INITIAL_STATE: OrderState = 'Pending';

/** The creation's refusal: the same violations validate_order_constraints lists. */
export function constraintsViolated(violations: Violation[]) {
  const codes = [...new Set(violations.map((v) => v.code))].join(', ');
  return unprocessable('order_constraints_violated', `The order cannot be placed (${codes}): ${violations.map((v) => v.message).join('; ')}`, violations);
}

interface NewOrder {
  companyId: string;
  orderType: AnyOrderType;
  employeeId: string | null;
  parentId?: string | undefined;
  country: string | null;
  dispositions?: unknown;
  legalHold?: unknown;
  pickupWindow?: unknown;
  items?: unknown;
  createdBy: string;
  at: string;
}

const jsonb = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

/** Inserts an order with its `created` event: no order exists without the start of its log. */
async function insertOrder(tx: Queryable, o: NewOrder): Promise<string> {
  const id = newId('ord');
  await tx.query(sql`INSERT INTO orders (id, company_id, order_type, status, employee_id, parent_id, country,
      dispositions, legal_hold, pickup_window, items, created_by, created_at, updated_at)
    VALUES (${id}, ${o.companyId}, ${o.orderType}, ${INITIAL_STATE}, ${o.employeeId}, ${o.parentId ?? null}, ${o.country},
      ${jsonb(o.dispositions)}::jsonb, ${jsonb(o.legalHold)}::jsonb, ${jsonb(o.pickupWindow)}::jsonb, ${jsonb(o.items)}::jsonb,
      ${o.createdBy}, ${o.at}, ${o.at})`);
  await recordCreationEvent(tx, { orderId: id, type: 'created', at: o.at });
  return id;
}

export interface NewOrderEvent {
  orderId: string;
  type: 'created' | 'accessory_requested';
  at: string;
  deviceId?: string | undefined;
  data?: Record<string, unknown> | undefined;
}

/** Events written by the creations; the caller is their source. */
async function recordCreationEvent(tx: Queryable, e: NewOrderEvent): Promise<void> {
  const statusTo = e.type === 'created' ? INITIAL_STATE : null;
  await tx.query(sql`INSERT INTO order_events (id, order_id, type, status_to, device_id, source, occurred_at, recorded_at, data)
    VALUES (${newId('evt')}, ${e.orderId}, ${e.type}, ${statusTo}, ${e.deviceId ?? null}, 'api', ${e.at}, ${e.at},
      ${JSON.stringify(e.data ?? {})}::jsonb)`);
}

/**
 * Places a Deployment, Offboarding, Collection, Maintenance or Swap from Inventory order in one
 * transaction. The rules are re-checked inside it; the device_holds primary key then settles a
 * race for a device: the loser's hold is not written, and it rolls back whole.
 */
export async function createOrder(core: DomainDeps, p: Principal, input: DeviceOrderInput): Promise<OrderRecord> {
  const id = await core.db.transaction(async (tx) => {
    const { violations, plan } = await checkDeviceOrder(tx, p, input, core.now());
    if (!plan) throw constraintsViolated(violations);
    const at = core.now().toISOString();
    const orderId = await insertOrder(tx, {
      companyId: plan.companyId,
      orderType: input.orderType,
      employeeId: plan.employeeId,
      country: plan.country,
      dispositions: plan.dispositions,
      legalHold: input.legalHold,
      pickupWindow: input.pickupWindow,
      createdBy: p.userId,
      at,
    });
    await tx.query(sql`INSERT INTO order_devices (order_id, device_id, role, status)
      VALUES ${join(plan.devices.map((d) => sql`(${orderId}, ${d.id}, ${d.role}, 'requested')`), ', ')}`);
    const held = await tx.query<{ deviceId: string }>(sql`INSERT INTO device_holds (device_id, order_id)
      VALUES ${join(plan.devices.map((d) => sql`(${d.id}, ${orderId})`), ', ')}
      ON CONFLICT (device_id) DO NOTHING RETURNING device_id AS "deviceId"`);
    const heldIds = new Set(held.map((h) => h.deviceId));
    const taken = plan.devices.filter((d) => !heldIds.has(d.id));
    if (taken.length > 0) {
      throw constraintsViolated(
        taken.map((d): Violation => ({
          code: 'device_in_open_order',
          message: `Device ${d.id} was just taken by another open order`,
          field: d.field,
          productId: d.id,
        })),
      );
    }
    return orderId;
  });
  // The creator reads it back with their scope only: creating does not need mcp:orders:read.
  return loadOrder(core.db, p, id);
}

/** Places a Purchase for Employee or Purchase for Inventory order; its catalog items are stored on the order. */
export async function createPurchaseOrder(core: DomainDeps, p: Principal, input: PurchaseOrderInput): Promise<OrderRecord> {
  const id = await core.db.transaction(async (tx) => {
    const { violations, plan } = await checkPurchaseOrder(tx, p, input);
    if (!plan) throw constraintsViolated(violations);
    const at = core.now().toISOString();
    const orderId = await insertOrder(tx, {
      companyId: plan.companyId,
      orderType: input.orderType,
      employeeId: plan.employeeId,
      country: plan.country,
      items: plan.items,
      createdBy: p.userId,
      at,
    });
    return orderId;
  });
  return loadOrder(core.db, p, id);
}

/** How add_power_accessory names the device that needs a charger: exactly one of the two. */
export interface AccessoryDeviceRef {
  productId?: string | undefined;
  serialNumber?: string | undefined;
}

interface ParentOrder {
  id: string;
  companyId: string;
  employeeId: string | null;
  country: string | null;
  status: OrderState;
}

/** Catalog ids carry the `cat_` prefix; a body naming one is a SKU, not a device. */
const CATALOG_ID_PREFIX = 'cat_';
const CHARGER_TYPE = 'Chargers';

function expectedDeviceNotSku(field: string, message: string) {
  return badRequest('expected_device_not_sku', message, [
    { field, rule: 'device_not_sku', message: 'send the productId or serialNumber of the device that needs the charger' },
  ]);
}

async function refuseCatalogSku(tx: Queryable, ref: AccessoryDeviceRef, field: string): Promise<void> {
  const values = [ref.productId, ref.serialNumber].filter((v): v is string => v !== undefined);
  const catalog = await tx.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE id = ANY(${values}::text[])`);
  const sku = catalog[0]?.id ?? values.find((v) => v.startsWith(CATALOG_ID_PREFIX));
  if (sku !== undefined) {
    throw expectedDeviceNotSku(
      field,
      `${sku} is a catalog item (a SKU), not a device: send the productId or serialNumber of the device that needs a charger, and the matching charger is ordered for it`,
    );
  }
}

/**
 * Requests a replacement charger for a device on an open order: a sub-order of type Accessory
 * serving that device. The device stays held by the parent order, so the sub-order holds nothing.
 */
export async function addPowerAccessory(core: DomainDeps, p: Principal, orderId: string, ref: AccessoryDeviceRef): Promise<OrderRecord> {
  const field = ref.productId !== undefined ? 'productId' : 'serialNumber';
  const named = ref.productId ?? ref.serialNumber ?? '';
  await core.db.transaction(async (tx) => {
    // Locking the parent serialises accessory requests on one order, so a repeat cannot slip in.
    const [order] = await tx.query<ParentOrder>(sql`
      SELECT o.id, o.company_id AS "companyId", o.employee_id AS "employeeId", o.country, o.status
      FROM orders o WHERE o.id = ${orderId} AND ${orderScope(p, p.companyIds)} FOR UPDATE OF o`);
    if (!order) throw notFound('Order', orderId);
    await refuseCatalogSku(tx, ref, field);

    const matches = sql`(d.id = ${ref.productId ?? null} OR d.serial_number = ${ref.serialNumber ?? null})`;
    const [onOrder] = await tx.query<{ id: string; productType: string }>(sql`
      SELECT d.id, d.product_type AS "productType" FROM order_devices od JOIN devices d ON d.id = od.device_id
      WHERE od.order_id = ${order.id} AND ${matches}`);
    const device =
      onOrder ??
      (await tx.query<{ id: string; productType: string }>(sql`
        SELECT d.id, d.product_type AS "productType" FROM devices d
        WHERE d.company_id = ${order.companyId} AND ${matches} AND ${deviceScope(p, [order.companyId])}`))[0];
    if (device?.productType === CHARGER_TYPE) {
      throw expectedDeviceNotSku(field, `Device ${device.id} is itself a charger: send the device that needs the charger, not the charger`);
    }
    if (FINAL_STATES.includes(order.status)) {
      throw unprocessable('order_closed', `Order ${order.id} is ${order.status}: accessories can be requested only on an open order`, [
        { field: 'id', rule: 'order_open', message: `the order is ${order.status}` },
      ]);
    }
    if (!onOrder) {
      throw unprocessable('device_not_on_order', `Device ${named} is not on order ${order.id}: request chargers only for the order's devices`, [
        { field, rule: 'on_order', message: `not one of the devices of order ${order.id}` },
      ]);
    }
    const [open] = await tx.query<{ id: string }>(sql`
      SELECT s.id FROM orders s JOIN order_devices od ON od.order_id = s.id
      WHERE s.parent_id = ${order.id} AND s.order_type = 'Accessory' AND od.device_id = ${onOrder.id}
        AND NOT (s.status = ANY(${[...FINAL_STATES]}::text[]))`);
    if (open) {
      throw conflict('accessory_already_requested', `A charger for device ${onOrder.id} is already requested on this order (sub-order ${open.id})`, [
        { field, rule: 'one_open_accessory_per_device', message: `sub-order ${open.id} is still open` },
      ]);
    }

    const at = core.now().toISOString();
    const subOrderId = await insertOrder(tx, {
      companyId: order.companyId,
      orderType: 'Accessory',
      employeeId: order.employeeId,
      parentId: order.id,
      country: order.country,
      createdBy: p.userId,
      at,
    });
    await tx.query(sql`INSERT INTO order_devices (order_id, device_id, role, status) VALUES (${subOrderId}, ${onOrder.id}, 'service', 'requested')`);
    await recordCreationEvent(tx, { orderId: order.id, type: 'accessory_requested', at, deviceId: onOrder.id, data: { subOrderId } });
    await tx.query(sql`UPDATE orders SET updated_at = ${at} WHERE id = ${order.id}`);
  });
  return loadOrder(core.db, p, orderId);
}
