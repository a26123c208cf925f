import { z } from 'zod';
import type { Logger } from 'pino';
import type { Principal } from '../../access/principal.js';
import { orderScope } from '../../access/scope.js';
import type { Config } from '../../kit/config.js';
import type { Queryable } from '../../store/db.js';
import { sql } from '../../store/sql.js';
import { notFound } from '../../kit/errors.js';
import { callUpstream } from '../../kit/upstream.js';
import type { CourierState, OrderState } from './model.js';
import { EVENT_ORDER } from './read.js';
import { hiddenDevices } from './device-scope.js';

/**
 * Shipment tracking: the stored fulfilment events of an order merged, per shipment, with the
 * live events of the courier API. The courier is best effort: when it is not configured, down,
 * slow or malformed, each shipment says so and the stored events are answered alone.
 */


export interface TrackingEvent {
  source: 'stored' | 'courier';
  /** The stored event's type, or `courier` for a live event. */
  type: 'shipment' | 'status_changed' | 'device' | 'courier';
  occurredAt: string;
  status: string;
  location: string | null;
  description: string | null;
  /** Null for an event about no device, or about one the reader may not read (then `hidden`). */
  deviceId: string | null;
  hidden?: true;
}

export interface CourierLookup {
  courier: { state: CourierState; detail?: string };
  /** The courier's current status of the parcel; null unless live. */
  status: string | null;
  events: TrackingEvent[];
}

export interface CourierClient {
  track(carrier: string, trackingNumber: string): Promise<CourierLookup>;
}

/** The courier API's answer to GET /v1/tracking/{carrier}/{trackingNumber}; extra fields are ignored. */
const CourierReply = z.object({
  status: z.string().min(1),
  events: z.array(
    z.object({
      occurredAt: z.iso.datetime({ offset: true }),
      status: z.string().min(1),
      location: z.string().nullish(),
      description: z.string().nullish(),
    }),
  ),
});

const failed = (state: CourierState, detail: string): CourierLookup => ({ courier: { state, detail }, status: null, events: [] });

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'TimeoutError';
}

const messageOf = (error: unknown): string =>
  error instanceof Object && 'message' in error && typeof error.message === 'string' ? error.message : String(error);

/** Why the call failed, with the socket error (ECONNREFUSED, …) where a cause holds it. */
function failureDetail(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause === undefined ? messageOf(error) : `${messageOf(error)}: ${messageOf(cause)}`;
}

/** The courier API client; one timeout bounds each call, body included. */
export function courierClient(config: Pick<Config, 'courierApiUrl' | 'courierTimeoutMs'>, logger: Logger): CourierClient {
  const base = config.courierApiUrl?.replace(/\/+$/, '');
  const lookup = async (carrier: string, trackingNumber: string): Promise<CourierLookup> => {
    if (!base) return { courier: { state: 'not_configured' }, status: null, events: [] };
    const url = `${base}/v1/tracking/${encodeURIComponent(carrier)}/${encodeURIComponent(trackingNumber)}`;
    let text: string;
    try {
      // A call past the timeout closes its connection: a hung courier cannot pile sockets up.
      const response = await callUpstream(url, { method: 'GET', headers: { accept: 'application/json' }, timeoutMs: config.courierTimeoutMs });
      if (response.status !== 200) return failed('unavailable', `courier answered HTTP ${response.status}`);
      text = response.text;
    } catch (error) {
      if (isTimeout(error)) return failed('timeout', `no answer within ${config.courierTimeoutMs} ms`);
      return failed('unavailable', failureDetail(error));
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return failed('invalid_response', 'the body is not JSON');
    }
    const reply = CourierReply.safeParse(body);
    if (!reply.success) {
      const issue = reply.error.issues[0];
      return failed('invalid_response', `${issue?.path.join('.') || '(body)'}: ${issue?.message ?? 'invalid'}`);
    }
    return {
      courier: { state: 'live' },
      status: reply.data.status,
      events: reply.data.events.map((e) => ({
        source: 'courier',
        type: 'courier',
        occurredAt: new Date(e.occurredAt).toISOString(),
        status: e.status,
        location: e.location ?? null,
        description: e.description ?? null,
        deviceId: null,
      })),
    };
  };
  return {
    async track(carrier, trackingNumber) {
      const result = await lookup(carrier, trackingNumber);
      if (result.courier.state !== 'live' && result.courier.state !== 'not_configured') {
        logger.warn({ carrier, trackingNumber, courier: result.courier }, 'courier tracking lookup failed; answering stored events');
      }
      return result;
    },
  };
}

interface ShipmentRow {
  id: string;
  carrier: string;
  trackingNumber: string;
  direction: string;
  createdAt: string;
}

interface StoredEventRow {
  type: 'shipment' | 'status_changed' | 'device';
  statusFrom: string | null;
  statusTo: string | null;
  deviceId: string | null;
  serialNumber: string | null;
  note: string | null;
  data: Record<string, unknown> | null;
  occurredAt: string;
}

export interface TrackedShipment extends ShipmentRow {
  courier: CourierLookup['courier'];
  currentStatus: string | null;
  events: TrackingEvent[];
}

export interface TrackingResult {
  orderId: string;
  status: OrderState;
  shipments: TrackedShipment[];
}

const nonEmpty = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

function storedEvent(row: StoredEventRow, hidden: ReadonlySet<string>): TrackingEvent {
  const isHidden = row.deviceId !== null && hidden.has(row.deviceId);
  const base = { source: 'stored', type: row.type, occurredAt: row.occurredAt, location: null, deviceId: isHidden ? null : row.deviceId } as const;
  switch (row.type) {
    case 'shipment':
      return { ...base, status: 'registered', description: row.note ?? `Shipment registered with ${String(row.data?.carrier)}` };
    case 'status_changed':
      return { ...base, status: row.statusTo ?? '', description: row.note ?? `Order ${row.statusFrom ?? ''} → ${row.statusTo ?? ''}` };
    case 'device': {
      const status = nonEmpty(row.data?.status) ?? 'updated';
      if (isHidden) return { ...base, status, description: row.note ?? `A device outside your scope: ${status}`, hidden: true };
      return { ...base, status, description: row.note ?? `Device ${row.serialNumber ?? row.deviceId ?? ''}: ${status}` };
    }
  }
}

/** A shipment event belongs to the shipment with its carrier and tracking number. */
function isEventOf(row: StoredEventRow, shipment: ShipmentRow): boolean {
  return row.data?.carrier === shipment.carrier && row.data?.trackingNumber === shipment.trackingNumber;
}

const byTime = (a: TrackingEvent, b: TrackingEvent) => new Date(a.occurredAt).getTime() - new Date(b.occurredAt).getTime();

/**
 * Tracking of one order. Each shipment's timeline holds its own registration event, the
 * order-level milestones (Shipped, Delivered, device events) and the courier's live events,
 * sorted by time (stored first on a tie). Couriers are queried concurrently.
 */
export async function getTracking(db: Queryable, p: Principal, id: string, courier: CourierClient): Promise<TrackingResult> {
  const [order] = await db.query<{ id: string; status: OrderState }>(sql`
    SELECT o.id, o.status FROM orders o WHERE o.id = ${id} AND ${orderScope(p, p.companyIds)}`);
  if (!order) throw notFound('Order', id);
  const [shipments, rows, hidden] = await Promise.all([
    db.query<ShipmentRow>(sql`
      SELECT id, carrier, tracking_number AS "trackingNumber", direction, created_at AS "createdAt"
      FROM shipments WHERE order_id = ${id} ORDER BY created_at, id`),
    db.query<StoredEventRow>(sql`
      SELECT ev.type, ev.status_from AS "statusFrom", ev.status_to AS "statusTo", ev.device_id AS "deviceId",
        d.serial_number AS "serialNumber", ev.note, ev.data, ev.occurred_at AS "occurredAt"
      FROM order_events ev LEFT JOIN devices d ON d.id = ev.device_id
      WHERE ev.order_id = ${id}
        AND (ev.type IN ('shipment', 'device') OR (ev.type = 'status_changed' AND ev.status_to IN ('Shipped', 'Delivered')))
      ORDER BY ${EVENT_ORDER}`),
    hiddenDevices(db, p, id),
  ]);
  const lookups = await Promise.all(shipments.map((s) => courier.track(s.carrier, s.trackingNumber)));
  return {
    orderId: order.id,
    status: order.status,
    shipments: shipments.map((shipment, i) => {
      const live = lookups[i]!;
      const stored = rows.filter((row) => row.type !== 'shipment' || isEventOf(row, shipment)).map((row) => storedEvent(row, hidden));
      const events = [...stored, ...live.events].sort(byTime);
      return {
        ...shipment,
        courier: live.courier,
        currentStatus: live.status ?? stored.at(-1)?.status ?? null,
        events,
      };
    }),
  };
}
