/**
 * The order model: types, states and their transitions, device roles, dispositions,
 * SLA targets and delay reasons. Every rule about orders that is not SQL lives here.
 */

export const ORDER_TYPES = ['Deployment', 'Offboarding', 'Collection', 'Maintenance', 'Swap from Inventory'] as const;
export const PURCHASE_TYPES = ['Purchase for Employee', 'Purchase for Inventory'] as const;
/** Sub-orders created by the service itself (a replacement charger for a device on an order). */
export const SUB_ORDER_TYPES = ['Accessory'] as const;
export type OrderType = (typeof ORDER_TYPES)[number];
export type PurchaseType = (typeof PURCHASE_TYPES)[number];
export type AnyOrderType = OrderType | PurchaseType | (typeof SUB_ORDER_TYPES)[number];
export const ALL_ORDER_TYPES: readonly AnyOrderType[] = [...ORDER_TYPES, ...PURCHASE_TYPES, ...SUB_ORDER_TYPES];

/** Every order state. Status filters compare case-insensitively (`shipped` finds `Shipped`). */
export const ORDER_STATES = ['Pending', 'In Progress', 'On Hold', 'Shipped', 'Delivered', 'Completed', 'Cancelled'] as const;
export type OrderState = (typeof ORDER_STATES)[number];

/** Allowed transitions; Completed and Cancelled are final. */
export const TRANSITIONS: Record<OrderState, readonly OrderState[]> = {
  Pending: ['In Progress', 'On Hold', 'Cancelled'],
  'In Progress': ['Shipped', 'On Hold', 'Completed', 'Cancelled'],
  'On Hold': ['Pending', 'In Progress', 'Cancelled'],
  Shipped: ['Delivered', 'On Hold'],
  Delivered: ['Completed'],
  Completed: [],
  Cancelled: [],
};

export const FINAL_STATES: readonly OrderState[] = ['Completed', 'Cancelled'];

export function canTransition(from: OrderState, to: OrderState): boolean {
  return TRANSITIONS[from].includes(to);
}

/**
 * What an order does with each device: `deliver` sends an available device to the employee,
 * `return` brings an assigned device back, `service` sends it to repair and back.
 */
export const DEVICE_ROLES = ['deliver', 'return', 'service'] as const;
export type DeviceRole = (typeof DEVICE_ROLES)[number];

/** What happens to a returned device (Offboarding, Collection, the returned side of a Swap). */
export const DISPOSITION_ACTIONS = ['return_to_stock', 'wipe_and_redeploy', 'recycle', 'keep'] as const;
export type DispositionAction = (typeof DISPOSITION_ACTIONS)[number];
/** A legal hold preserves the device's data: it blocks these dispositions. */
export const BLOCKED_BY_LEGAL_HOLD: readonly DispositionAction[] = ['wipe_and_redeploy', 'recycle'];

/** Reasons a delay is recorded with; the SLA answer lists the open ones. */
export const DELAY_REASONS = ['awaiting_pickup', 'customs', 'stock_shortage', 'address_problem', 'carrier_delay', 'device_not_returned'] as const;
export type DelayReason = (typeof DELAY_REASONS)[number];

/** SLA target in calendar days per order type, before the country adjustment. */
export const SLA_BASE_DAYS: Record<AnyOrderType, number> = {
  Deployment: 5,
  Offboarding: 10,
  Collection: 7,
  Maintenance: 10,
  'Swap from Inventory': 7,
  'Purchase for Employee': 10,
  'Purchase for Inventory': 14,
  Accessory: 5,
};

/** Countries served from our own warehouses add no days; every other country adds SLA_OTHER_COUNTRY_DAYS. */
export const SLA_DOMESTIC_COUNTRIES = ['US', 'DE', 'GB', 'FR', 'ES', 'SE', 'NL'];
export const SLA_OTHER_COUNTRY_DAYS = 3;
/** Share of the target after which an open order is at risk. */
export const SLA_AT_RISK_SHARE = 0.75;

export function slaTargetDays(type: AnyOrderType, country: string | null): number {
  const extra = country && SLA_DOMESTIC_COUNTRIES.includes(country) ? 0 : SLA_OTHER_COUNTRY_DAYS;
  return SLA_BASE_DAYS[type] + extra;
}

/**
 * Progress of one device on an order (order_devices.status): `requested` at creation, then what
 * the logistics side reports for that device.
 */
export const DEVICE_REQUEST_STATUSES = ['requested', 'picked_up', 'in_transit', 'delivered', 'received', 'wiped', 'repaired', 'recycled', 'lost'] as const;
export type DeviceRequestStatus = (typeof DEVICE_REQUEST_STATUSES)[number];

/** A shipment takes devices to the employee (`outbound`) or brings them back (`return`). */
export const SHIPMENT_DIRECTIONS = ['outbound', 'return'] as const;
export type ShipmentDirection = (typeof SHIPMENT_DIRECTIONS)[number];

/*
 * Vocabularies of the order operations' schemas, kept here beside the model so the operation
 * table (what the CLI reads) needs none of the SQL modules that use them.
 */

/** Why an order is refused: the stable codes of the business rules (rules.ts). */
export const VIOLATION_CODES = [
  'employee_not_found',
  'employee_out_of_scope',
  'employee_has_no_delivery_address',
  'employee_has_no_devices',
  'device_not_found',
  'device_not_available',
  'device_not_assigned_to_employee',
  'device_in_open_order',
  'swap_requires_return_and_replacement',
  'disposition_device_not_in_order',
  'legal_hold_blocks_disposition',
  'pickup_window_not_in_future',
  'catalog_item_not_found',
  'catalog_item_unavailable_in_country',
  'insufficient_catalog_stock',
  'items_multiple_countries',
  'items_country_not_employee_country',
  'country_out_of_scope',
] as const;
export type ViolationCode = (typeof VIOLATION_CODES)[number];

/** Order types that bring devices back: only they take dispositions and a pickup window. */
export const COLLECTING_TYPES: readonly OrderType[] = ['Offboarding', 'Collection', 'Swap from Inventory'];

/** Where an order stands against its SLA (sla.ts). */
export const SLA_STATUSES = ['on_track', 'at_risk', 'delayed', 'met', 'missed', 'cancelled'] as const;
export type SlaStatus = (typeof SLA_STATUSES)[number];

/** How the courier's live tracking answered (tracking.ts). */
export const COURIER_STATES = ['live', 'not_configured', 'unavailable', 'timeout', 'invalid_response'] as const;
export type CourierState = (typeof COURIER_STATES)[number];

/** The fields list_orders sorts by; `-field` sorts descending. */
export const ORDER_SORT_FIELDS = ['createdAt', 'updatedAt', 'status', 'orderType'] as const;
export type OrderSortField = (typeof ORDER_SORT_FIELDS)[number];
export const DEFAULT_ORDER_SORT = '-createdAt';
