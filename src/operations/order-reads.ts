import { z } from 'zod';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import { CompanyIdField, envelopeOf, Id, listEnvelope, PageFields, QueryBoolean, Text, Timestamp, SearchQuery } from './common.js';
import { OrderSchema } from './order-schemas.js';
import {
  ALL_ORDER_TYPES,
  DELAY_REASONS,
  DEVICE_REQUEST_STATUSES,
  DEVICE_ROLES,
  ORDER_STATES,
  SHIPMENT_DIRECTIONS,
  TRANSITIONS,
  DEFAULT_ORDER_SORT,
  ORDER_SORT_FIELDS,
  type OrderSortField,
} from '../domain/orders/model.js';

const orderEvents = onDemand(() => import('../domain/orders/events.js'));
const orderReads = onDemand(() => import('../domain/orders/read.js'));
const orderRecords = onDemand(() => import('../domain/orders/record.js'));

/** One of `values`, matched ignoring case and returned in its canonical spelling (`shipped` → `Shipped`). */
export function caseInsensitiveEnum<T extends string>(values: readonly T[], what: string) {
  return z
    .string()
    .trim()
    .transform((text, ctx) => {
      const match = values.find((v) => v.toLowerCase() === text.toLowerCase());
      if (match === undefined) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${values.join(', ')} (any case)` });
        return z.NEVER;
      }
      return match;
    })
    .describe(`${what}: one of ${values.join(', ')}; case-insensitive`);
}

export const OrderStatusInput = caseInsensitiveEnum(ORDER_STATES, 'Order status');

const SORT_PATTERN = new RegExp(`^-?(${ORDER_SORT_FIELDS.join('|')})$`);
const Sort = z
  .string()
  .regex(SORT_PATTERN, `must be one of ${ORDER_SORT_FIELDS.join(', ')}, optionally prefixed with - for descending`)
  .default(DEFAULT_ORDER_SORT)
  .transform((s) => ({ field: s.replace(/^-/, '') as OrderSortField, descending: s.startsWith('-') }))
  .describe(`Sort field: ${ORDER_SORT_FIELDS.join(', ')}; prefix with - for descending (default ${DEFAULT_ORDER_SORT}); ties break on id`);

const OrderTypeName = z.enum(ALL_ORDER_TYPES as [string, ...string[]]);
const State = z.enum(ORDER_STATES);

const OrderSummary = z.object({
  id: z.string(),
  companyId: z.string(),
  orderType: OrderTypeName,
  status: State,
  employeeId: z.string().nullable(),
  employeeName: z.string().nullable(),
  productIds: z.array(z.string()),
  country: z.string().nullable(),
  parentId: z.string().nullable().describe('The parent order of a sub-order; null for a top-level order'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const HistoryEvent = z.object({
  id: z.string(),
  type: z.string().describe('created, status_changed, delay, delay_resolved, shipment, device or accessory_requested'),
  statusFrom: State.nullable(),
  statusTo: State.nullable(),
  productId: z.string().nullable().describe('The device the event is about; null for order-wide events'),
  reason: z.string().nullable(),
  note: z.string().nullable(),
  source: z.string().describe('api (a caller), logistics (posted fulfilment and courier events) or system'),
  occurredAt: Timestamp,
  data: z.record(z.string(), z.unknown()).describe('Type-specific detail: shipment carrier and tracking number, device status, device effects of a status change'),
});

const TRANSITION_TABLE = Object.entries(TRANSITIONS)
  .map(([from, to]) => `${from} → ${to.length ? to.join(' | ') : '(final)'}`)
  .join('; ');

const OccurredAt = z.iso
  .datetime({ offset: true })
  .optional()
  .describe('When it happened (ISO 8601); defaults to now; not in the future, not before the order was created, and for a status change not before the previous one');
const Note = Text(500, 'Free-text note').optional();
const OrderId = Id.describe('Order id');
const DelayReason = z.enum(DELAY_REASONS);

/** One body per event type, discriminated on `type`. */
export const OrderEventBody = z.discriminatedUnion('type', [
  z.strictObject({ id: OrderId, type: z.literal('status'), status: OrderStatusInput, note: Note, occurredAt: OccurredAt }),
  z.strictObject({ id: OrderId, type: z.literal('delay'), reason: DelayReason, note: Note, occurredAt: OccurredAt }),
  z.strictObject({ id: OrderId, type: z.literal('delay_resolved'), reason: DelayReason, occurredAt: OccurredAt }),
  z.strictObject({
    id: OrderId,
    type: z.literal('shipment'),
    carrier: Text(100, 'Carrier, such as DHL or UPS'),
    trackingNumber: Text(100, "The carrier's tracking number"),
    direction: z.enum(SHIPMENT_DIRECTIONS).describe('outbound: to the employee; return: back from them'),
    occurredAt: OccurredAt,
  }),
  z.strictObject({
    id: OrderId,
    type: z.literal('device'),
    productId: Id.describe('A device on the order'),
    status: z.enum(DEVICE_REQUEST_STATUSES).describe('What happened to that device'),
    note: Note,
    occurredAt: OccurredAt,
  }),
]);

export const orderReadOperations = [
  defineOperation({
    name: 'list_orders',
    cli: 'orders list',
    title: 'List orders',
    description:
      'Searches and lists the orders the caller can see (managers: orders of the employees in their teams and regions, and inventory purchases for their regions; employees: their own). Filters: `status` (case-insensitive, e.g. shipped), `orderType`, `employeeId`, `topLevel` (true hides sub-orders), and `query`, free text matching the employee name or email, the order id or a device serial number. `sort` is one of createdAt, updatedAt, status, orderType, with - for descending (default -createdAt). Returns the v4 list envelope with `orders`; follow nextCursor for stable pages.',
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/orders',
    input: z.strictObject({
      ...PageFields,
      companyId: CompanyIdField,
      status: OrderStatusInput.optional(),
      orderType: caseInsensitiveEnum(ALL_ORDER_TYPES, 'Order type').optional(),
      query: SearchQuery.trim().optional().describe('Free text over employee name or email, order id and device serial number; case-insensitive'),
      employeeId: Id.optional().describe('Only orders concerning this employee'),
      topLevel: QueryBoolean.default(false).describe('true lists only top-level orders, hiding sub-orders'),
      sort: Sort,
    }),
    output: listEnvelope('orders', OrderSummary),
    columns: { orders: columnsOf(OrderSummary, ['id', 'orderType', 'status', 'employeeName', 'country', 'createdAt', 'productIds', 'parentId']) },
    handler: async ({ core, principal }, input) => envelopeOf('orders', await (await orderReads()).listOrders(core.db, principal, input)),
  }),
  defineOperation({
    name: 'get_order',
    cli: 'orders get',
    title: 'Get an order',
    description:
      'Reads one order with its hierarchy: the parent order, sub-orders (such as accessory requests), device requests (each device with its role and progress), dispositions, legal hold, pickup window and shipments. An order outside the caller’s scope is 404.',
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/orders/:id',
    input: z.strictObject({ id: OrderId }),
    output: OrderSchema,
    handler: async ({ core, principal }, input) => (await orderRecords()).loadOrder(core.db, principal, input.id),
  }),
  defineOperation({
    name: 'get_order_history',
    cli: 'orders history',
    title: 'Get order history',
    description:
      'The event log of one order in the order things happened (creation, status changes, delays and their resolution, shipments, device events), and a per-device timeline derived from it: for each device, the order-wide status changes, the shipments that carry it (outbound for delivered and serviced devices, return for returned and serviced ones) and the events about that device.',
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/orders/:id/history',
    input: z.strictObject({ id: OrderId }),
    output: z.object({
      orderId: z.string(),
      events: z.array(HistoryEvent),
      timeline: z.array(
        z.object({ productId: z.string(), serialNumber: z.string(), role: z.enum(DEVICE_ROLES), events: z.array(HistoryEvent) }),
      ),
    }),
    columns: { events: columnsOf(HistoryEvent, ['occurredAt', 'type', 'statusFrom', 'statusTo', 'productId', 'reason', 'note', 'source']) },
    handler: async ({ core, principal }, input) => (await orderReads()).getOrderHistory(core.db, principal, input.id),
  }),
  defineOperation({
    name: 'record_order_event',
    cli: 'orders event',
    title: 'Post a fulfilment or courier event',
    description: `The logistics side's way to move an order: admins only (anyone else gets 403 logistics_only); the operator's equivalent is \`svc-server orders advance|event\`. The body is one event, by \`type\`: \`status\` moves the order (transitions: ${TRANSITION_TABLE}; anything else is 409 invalid_transition listing the allowed next states); \`delay\` records a delay reason (${DELAY_REASONS.join(', ')}), \`delay_resolved\` closes it (422 no_open_delay if it is not open); \`shipment\` records a carrier and tracking number; \`device\` reports one device's progress (422 device_not_on_order). Status changes move the devices in the same transaction: In Progress puts serviced devices In Repair; Shipped puts delivered devices In Transit; Delivered assigns delivered devices to the employee, returns returned ones to stock (or Retired for recycle, still assigned for keep) and serviced ones to their holder; Completed does the same when there was no Delivered; Completed and Cancelled release the device holds, and Cancelled restores every device to its state before the order. Delays and shipments are refused on a closed order (422 order_closed). Returns the order.`,
    capability: 'mcp:orders:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/orders/:id/events',
    origin: 'extension',
    input: OrderEventBody,
    output: OrderSchema,
    handler: async ({ core, principal }, { id, ...event }) => {
      const { logisticsActor, recordOrderEvent } = await orderEvents();
      await recordOrderEvent(core, logisticsActor(principal), id, event);
      return (await orderRecords()).loadOrder(core.db, principal, id);
    },
  }),
];
