import type { Principal } from '../../access/principal.js';
import { readCompanies } from '../../access/principal.js';
import { deviceScope, orderScope, wholeCompanies } from '../../access/scope.js';
import type { Queryable } from '../../store/db.js';
import { paginate, type PageOrder, type PageRequest } from '../../store/paging.js';
import { and, containsText, raw, sql, type Sql } from '../../store/sql.js';
import { notFound } from '../../kit/errors.js';
import type { AnyOrderType, DeviceRole, OrderSortField, OrderState, ShipmentDirection } from './model.js';
import { hiddenDevices, shown, shownJson, visibleProductIds, type Shown } from './device-scope.js';

/** One row of list_orders: the order without its hierarchy (get_order has that). */
export interface OrderSummary {
  id: string;
  companyId: string;
  orderType: AnyOrderType;
  status: OrderState;
  employeeId: string | null;
  employeeName: string | null;
  /** The order's devices the reader may read (get_product). */
  productIds: string[];
  country: string | null;
  parentId: string | null;
  createdAt: string;
  updatedAt: string;
}

const summaryColumns = (p: Principal) => sql`o.id, o.company_id AS "companyId", o.order_type AS "orderType", o.status,
  o.employee_id AS "employeeId", e.display_name AS "employeeName", ${visibleProductIds(p)} AS "productIds",
  o.country, o.parent_id AS "parentId", o.created_at AS "createdAt", o.updated_at AS "updatedAt"`;

const SUMMARY_FROM = sql`orders o LEFT JOIN employees e ON e.id = o.employee_id`;

type SortColumn = Omit<PageOrder, 'field' | 'descending'> & { pageIndex?: string };

/** The sort allowlist: each field's column, and the index that pages a company's orders by it; `-field` sorts descending. */
const SORT_COLUMNS: Record<OrderSortField, SortColumn> = {
  createdAt: { column: sql`o.created_at`, type: 'timestamptz', pageIndex: 'orders_company_created_idx' },
  updatedAt: { column: sql`o.updated_at`, type: 'timestamptz', pageIndex: 'orders_company_updated_idx' },
  status: { column: sql`o.status`, type: 'text' },
  orderType: { column: sql`o.order_type`, type: 'text' },
};

export interface OrderSort {
  field: OrderSortField;
  descending: boolean;
}

export interface OrderFilters {
  companyId?: string | undefined;
  status?: OrderState | undefined;
  orderType?: AnyOrderType | undefined;
  query?: string | undefined;
  employeeId?: string | undefined;
  topLevel: boolean;
  sort: OrderSort;
}

/**
 * How a free text finds orders of `companies`: by the employee's name or email, the order id, or the
 * serial number of a device on the order that the reader may read (a serial they could not look up
 * finds nothing), each through its trigram index (migration 0012). Employees
 * and devices are gathered into arrays, so their orders are looked up by index however many the
 * planner guesses a LIKE matches (a guess that turned a common name into a hash join over every
 * order); gathered within the companies only (across all of them, a last name at 1M orders fetched
 * three times the orders the caller could see).
 */
function ordersMatching(p: Principal, text: string, companies: readonly string[]): [Sql, ...Sql[]] {
  const within = (alias: string) => sql`${raw(alias)}.company_id = ANY(${[...companies]}::text[])`;
  return [
    sql`o.employee_id = ANY(ARRAY(
      SELECT me.id FROM employees me WHERE ${within('me')} AND ${containsText(text, [sql`me.display_name`, sql`me.email`])}))`,
    containsText(text, [sql`o.id`]),
    sql`o.id = ANY(ARRAY(SELECT od.order_id FROM order_devices od WHERE od.device_id = ANY(ARRAY(
      SELECT d.id FROM devices d WHERE ${deviceScope(p, companies)} AND ${containsText(text, [sql`d.serial_number`])}))))`,
  ];
}

export async function listOrders(db: Queryable, p: Principal, input: PageRequest & OrderFilters) {
  const { companyId, status, orderType, query, employeeId, topLevel, sort } = input;
  const companies = readCompanies(p, companyId);
  const filters = [orderScope(p, companies)];
  if (status) filters.push(sql`o.status = ${status}`);
  if (orderType) filters.push(sql`o.order_type = ${orderType}`);
  if (employeeId) filters.push(sql`o.employee_id = ${employeeId}`);
  if (topLevel) filters.push(sql`o.parent_id IS NULL`);
  const { pageIndex, ...sortColumn } = SORT_COLUMNS[sort.field];
  return paginate<OrderSummary>(db, {
    columns: summaryColumns(p),
    from: SUMMARY_FROM,
    where: and(filters),
    key: sql`o.id`,
    order: { ...sortColumn, field: sort.field, descending: sort.descending },
    pageIndex,
    filters: { companyId, status, orderType, query, employeeId, topLevel, sort: `${sort.descending ? '-' : ''}${sort.field}` },
    everyRowOf: wholeCompanies('orders', companies, filters, p.role === 'admin'),
    matching: query ? ordersMatching(p, query, companies) : undefined,
  }, input);
}

export interface HistoryEvent {
  id: string;
  type: string;
  statusFrom: OrderState | null;
  statusTo: OrderState | null;
  productId: string | null;
  reason: string | null;
  note: string | null;
  source: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

export const EVENT_COLUMNS = sql`ev.id, ev.type, ev.status_from AS "statusFrom", ev.status_to AS "statusTo",
  ev.device_id AS "productId", ev.reason, ev.note, ev.source, ev.occurred_at AS "occurredAt", ev.data`;

/** Log order: when it happened, then when it was recorded (events posted late keep their real time). */
export const EVENT_ORDER = sql`ev.occurred_at, ev.recorded_at, ev.id`;

interface TimelineDevice {
  productId: string;
  serialNumber: string;
  role: DeviceRole;
}

/** Devices the reader may not read (get_product) are shown hidden, in the log and on the timeline alike. */
export interface OrderHistory {
  orderId: string;
  events: Array<Shown<HistoryEvent>>;
  timeline: Array<Shown<TimelineDevice & { events: Array<Shown<HistoryEvent>> }>>;
}

/** Shipments going out carry what is delivered or serviced; those coming back, what is returned or serviced. */
const SHIPPED_ROLES: Record<ShipmentDirection, readonly DeviceRole[]> = {
  outbound: ['deliver', 'service'],
  return: ['return', 'service'],
};

/** Whether an event belongs on a device's timeline: order-wide status changes, its shipments, its own events. */
function concerns(event: HistoryEvent, device: TimelineDevice): boolean {
  if (event.productId !== null) return event.productId === device.productId;
  if (event.type === 'shipment') {
    const direction = event.data['direction'] as ShipmentDirection | undefined;
    return direction === undefined || SHIPPED_ROLES[direction].includes(device.role);
  }
  return event.statusTo !== null;
}

/** The event log of one visible order, and for each of its devices the part of the log that concerns it. */
export async function getOrderHistory(db: Queryable, p: Principal, id: string): Promise<OrderHistory> {
  const [order] = await db.query<{ id: string }>(sql`SELECT o.id FROM orders o WHERE o.id = ${id} AND ${orderScope(p, p.companyIds)}`);
  if (!order) throw notFound('Order', id);
  const [events, devices, hidden] = await Promise.all([
    db.query<HistoryEvent>(sql`SELECT ${EVENT_COLUMNS} FROM order_events ev WHERE ev.order_id = ${id} ORDER BY ${EVENT_ORDER}`),
    db.query<TimelineDevice>(sql`
      SELECT d.id AS "productId", d.serial_number AS "serialNumber", od.role
      FROM order_devices od JOIN devices d ON d.id = od.device_id WHERE od.order_id = ${id} ORDER BY d.id`),
    hiddenDevices(db, p, id),
  ]);
  const shownEvent = (event: HistoryEvent) => {
    const effects = event.data['deviceEffects'];
    return shown(effects === undefined ? event : { ...event, data: { ...event.data, deviceEffects: shownJson(effects, hidden) } }, hidden);
  };
  return {
    orderId: id,
    events: events.map(shownEvent),
    timeline: devices.map((device) => shown({ ...device, events: events.filter((event) => concerns(event, device)).map(shownEvent) }, hidden)),
  };
}
