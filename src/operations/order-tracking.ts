import { z } from 'zod';
import { defineOperation, onDemand } from './operation.js';
import { Id, Timestamp } from './common.js';
import { HiddenDevice } from './order-schemas.js';
import {
  ALL_ORDER_TYPES,
  COURIER_STATES,
  SLA_STATUSES,
  ORDER_STATES,
  SLA_AT_RISK_SHARE,
  SLA_BASE_DAYS,
  SLA_DOMESTIC_COUNTRIES,
  SLA_OTHER_COUNTRY_DAYS,
} from '../domain/orders/model.js';

const orderTracking = onDemand(() => import('../domain/orders/tracking.js'));
const orderSla = onDemand(() => import('../domain/orders/sla.js'));

const OrderInput = z.strictObject({ id: Id.describe('Order id') });

const SLA_TARGETS = Object.entries(SLA_BASE_DAYS)
  .map(([type, days]) => `${type} ${days}`)
  .join(', ');

const Sla = z.object({
  orderId: z.string(),
  orderType: z.enum(ALL_ORDER_TYPES as [string, ...string[]]),
  country: z.string().nullable(),
  orderStatus: z.enum(ORDER_STATES),
  status: z.enum(SLA_STATUSES),
  targetDays: z.number().int(),
  createdAt: Timestamp,
  closedAt: Timestamp.nullable(),
  dueAt: Timestamp.describe('createdAt + targetDays + pausedDays'),
  elapsedDays: z.number().describe('Days counted against the SLA (On Hold excluded), 1 decimal'),
  pausedDays: z.number().describe('Days spent On Hold, 1 decimal'),
  remainingDays: z.number().describe('targetDays − elapsedDays; negative once overdue'),
  reasons: z.array(
    z.object({
      reason: z.string(),
      since: Timestamp.nullable(),
      note: z.string().nullable(),
      origin: z.enum(['event', 'derived']),
    }),
  ),
});

const TrackingEvent = z.object({
  source: z.enum(['stored', 'courier']),
  type: z.enum(['shipment', 'status_changed', 'device', 'courier']),
  occurredAt: Timestamp,
  status: z.string(),
  location: z.string().nullable(),
  description: z.string().nullable(),
  deviceId: z.string().nullable(),
  hidden: HiddenDevice,
});

const Tracking = z.object({
  orderId: z.string(),
  status: z.enum(ORDER_STATES),
  shipments: z.array(
    z.object({
      id: z.string(),
      carrier: z.string(),
      trackingNumber: z.string(),
      direction: z.string(),
      createdAt: Timestamp,
      courier: z.object({ state: z.enum(COURIER_STATES), detail: z.string().optional() }),
      currentStatus: z.string().nullable(),
      events: z.array(TrackingEvent),
    }),
  ),
});

export const orderTrackingOperations = [
  defineOperation({
    name: 'get_order_sla',
    cli: 'orders sla',
    title: 'Get the SLA of an order',
    description: 'The SLA of one order: target, due date, days elapsed and left, status (on_track, at_risk, delayed; met, missed, cancelled once closed) and delay reasons. Time On Hold does not count.',
    details: [
      `Target in calendar days per type: ${SLA_TARGETS}; plus ${SLA_OTHER_COUNTRY_DAYS} days outside ${SLA_DOMESTIC_COUNTRIES.join(', ')}.`,
      'The clock runs from creation and stops while the order is On Hold (pausedDays; dueAt moves later by as much).',
      `status of an open order: delayed once past dueAt; at_risk once ${SLA_AT_RISK_SHARE * 100}% of the target has elapsed or any reason is listed; else on_track.`,
      'A Completed order is met or missed (closedAt against dueAt); a Cancelled one is cancelled.',
      "reasons: recorded delays not yet resolved (origin event, with since and note), plus derived ones (origin derived):",
      'awaiting_pickup when an Offboarding, Collection or Swap is still Pending or In Progress after its pickupWindow.end and no device was reported picked_up;',
      'stock_shortage when a Deployment or Swap not yet shipped has a device to deliver that is no longer Available.',
    ].join(' '),
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/orders/:id/sla',
    input: OrderInput,
    output: Sla,
    handler: async ({ core, principal }, input) => (await orderSla()).getOrderSla(core.db, principal, input.id, core.now()),
  }),
  defineOperation({
    name: 'get_tracking',
    cli: 'orders tracking',
    title: 'Track the shipments of an order',
    description: "The shipments of one order, each with a timeline of stored and live courier events (source 'stored' or 'courier'). If the courier is unreachable (courier.state not live), stored events come alone; not an error.",
    details: [
      "currentStatus is the courier's status when live, else the latest stored status.",
      'courier.state per shipment: live, not_configured (no COURIER_API_URL), unavailable (unreachable or a non-200 answer),',
      'timeout (no answer within COURIER_TIMEOUT_MS) or invalid_response.',
      'Courier API contract: GET {COURIER_API_URL}/v1/tracking/{carrier}/{trackingNumber} answers 200 with',
      '{ status: string, events: [{ occurredAt: ISO 8601 with offset, status: string, location?: string, description?: string }] }.',
    ].join(' '),
    capability: 'mcp:orders:read',
    readOnly: true,
    openWorld: true,
    method: 'GET',
    path: '/v4/orders/:id/tracking',
    input: OrderInput,
    output: Tracking,
    handler: async ({ core, principal }, input) => {
      const { courierClient, getTracking } = await orderTracking();
      return getTracking(core.db, principal, input.id, courierClient(core.config, core.logger));
    },
  }),
];
