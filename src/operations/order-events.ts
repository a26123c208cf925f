import { z } from 'zod';
import { defineOperation, onDemand } from './operation.js';
import { Id, Text } from './common.js';
import { OrderSchema } from './order-schemas.js';
import { OrderId, OrderStatusInput } from './order-reads.js';
import { DELAY_REASONS, DEVICE_REQUEST_STATUSES, SHIPMENT_DIRECTIONS, TRANSITIONS } from '../domain/orders/model.js';

/*
 * The logistics side's write on an order: fulfilment and courier events (REST and svc, and the
 * operator's `svc-server orders advance|event`, which parses the same body).
 */

const orderEvents = onDemand(() => import('../domain/orders/events.js'));
const orderRecords = onDemand(() => import('../domain/orders/record.js'));

const TRANSITION_TABLE = Object.entries(TRANSITIONS)
  .map(([from, to]) => `${from} → ${to.length ? to.join(' | ') : '(final)'}`)
  .join('; ');

const OccurredAt = z.iso
  .datetime({ offset: true })
  .optional()
  .describe('When it happened (ISO 8601); defaults to now; not in the future, not before the order was created, and for a status change not before the previous one');
const Note = Text(500, 'Free-text note').optional();
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

export const orderEventOperations = [
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
