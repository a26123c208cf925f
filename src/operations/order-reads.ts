import { z } from 'zod';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import { CompanyIdField, envelopeOf, Id, listEnvelope, PageFields, QueryBoolean, Timestamp, SearchQuery } from './common.js';
import { HiddenDevice, OrderSchema } from './order-schemas.js';
import {
  ALL_ORDER_TYPES,
  DEVICE_ROLES,
  ORDER_STATES,
  DEFAULT_ORDER_SORT,
  ORDER_SORT_FIELDS,
  type OrderSortField,
} from '../domain/orders/model.js';

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
export const OrderId = Id.describe('Order id');

const SORT_PATTERN = new RegExp(`^-?(${ORDER_SORT_FIELDS.join('|')})$`);
const Sort = z
  .string()
  .regex(SORT_PATTERN, `must be one of ${ORDER_SORT_FIELDS.join(', ')}, optionally prefixed with - for descending`)
  .default(DEFAULT_ORDER_SORT)
  .transform((s) => ({ field: s.replace(/^-/, '') as OrderSortField, descending: s.startsWith('-') }))
  .describe(`Sort field, - first for descending; ties break on id`);

const OrderTypeName = z.enum(ALL_ORDER_TYPES as [string, ...string[]]);
const State = z.enum(ORDER_STATES);

const OrderSummary = z.object({
  id: z.string(),
  companyId: z.string(),
  orderType: OrderTypeName,
  status: State,
  employeeId: z.string().nullable(),
  employeeName: z.string().nullable(),
  productIds: z.array(z.string()).describe('The devices of the order you may read'),
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
  productId: z.string().nullable().describe('The device the event is about; null for order-wide events and for a hidden device'),
  reason: z.string().nullable(),
  note: z.string().nullable(),
  source: z.string().describe('api (a caller), logistics (posted fulfilment and courier events) or system'),
  occurredAt: Timestamp,
  data: z.record(z.string(), z.unknown()).describe('Type-specific detail: shipment carrier and tracking number, device status, device effects of a status change'),
  hidden: HiddenDevice,
});

export const orderReadOperations = [
  defineOperation({
    name: 'list_orders',
    cli: 'orders list',
    title: 'List orders',
    description: 'Lists the orders you can see, newest first, filtered by the given fields.',
    details: 'Managers see the orders of the employees in their teams and regions, and inventory purchases for their regions; employees see their own. `status` and `orderType` are case-insensitive. `productIds` lists the devices you can read (get_product). `sort` is one of createdAt, updatedAt, status, orderType, with - for descending (default -createdAt). Follow nextCursor for stable pages.',
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
    description: 'Reads one order: parent, sub-orders, devices with their role and progress, dispositions, legal hold, pickup window and shipments. A device outside your scope shows `hidden: true`, its identifiers null.',
    details: 'A hidden device is left out of productIds; get_product answers 404 for it. An order outside the caller’s scope is 404 not_found.',
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
    description: 'The event log of one order, oldest first, and a timeline per device (status changes, its shipments, its events). A device outside your scope shows `hidden: true`.',
    details: 'A device’s shipments: the outbound ones for delivered and serviced devices, the return ones for returned and serviced devices. A hidden device has no id or serial number on the timeline, in its events and in device effects.',
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/orders/:id/history',
    input: z.strictObject({ id: OrderId }),
    output: z.object({
      orderId: z.string(),
      events: z.array(HistoryEvent),
      timeline: z.array(
        z.object({
          productId: z.string().nullable(),
          serialNumber: z.string().nullable(),
          role: z.enum(DEVICE_ROLES),
          events: z.array(HistoryEvent),
          hidden: HiddenDevice,
        }),
      ),
    }),
    columns: { events: columnsOf(HistoryEvent, ['occurredAt', 'type', 'statusFrom', 'statusTo', 'productId', 'reason', 'note', 'source']) },
    handler: async ({ core, principal }, input) => (await orderReads()).getOrderHistory(core.db, principal, input.id),
  }),
];
