import { z } from 'zod';
import type { AnyOperation } from './operation.js';
import { defineOperation, onDemand } from './operation.js';
import { CompanyIdField, CountryCode, Id, Text } from './common.js';
import { OrderSchema } from './order-schemas.js';
import { BLOCKED_BY_LEGAL_HOLD, COLLECTING_TYPES, DISPOSITION_ACTIONS, ORDER_TYPES, PURCHASE_TYPES, VIOLATION_CODES } from '../domain/orders/model.js';

const orderCreation = onDemand(() => import('../domain/orders/create.js'));
const orderRules = onDemand(() => import('../domain/orders/rules.js'));

const MAX_DEVICES = 50;
const MAX_ITEMS = 20;
const MAX_QUANTITY = 100;
const MAX_PICKUP_WINDOW_DAYS = 14;
const DAY_MS = 86_400_000;

/** Adds an issue on every entry whose key repeats an earlier one. */
function unique<T>(key: (item: T) => string, at: (index: number) => PropertyKey[], what: string) {
  return (items: T[], ctx: z.RefinementCtx) => {
    const first = new Map<string, number>();
    items.forEach((item, i) => {
      const earlier = first.get(key(item));
      if (earlier === undefined) first.set(key(item), i);
      else ctx.addIssue({ code: 'custom', path: at(i), message: `repeats ${what}${earlier}`, params: { rule: 'unique' } });
    });
  };
}

const ProductRef = Id.describe("Device id (productId) or serial number, resolved within the employee's company");
const SerialNumber = Text(64, 'Serial number of the device');
const collecting = COLLECTING_TYPES.join(', ');

const Disposition = z.strictObject({
  productId: ProductRef.describe('A device the order returns (one of productIds)'),
  action: z.enum(DISPOSITION_ACTIONS).describe(`What happens to the returned device: ${DISPOSITION_ACTIONS.join(', ')}`),
});

const LegalHold = z
  .strictObject({
    caseId: Text(100, 'Legal case reference'),
    reason: Text(500, 'Why the data must be preserved'),
    until: z.iso.date().optional().describe('When the hold is expected to lift; informational'),
  })
  .describe(`Preserves the data of the returned devices: dispositions ${BLOCKED_BY_LEGAL_HOLD.join(' and ')} are refused`);

const PickupWindow = z
  .strictObject({
    start: z.iso.datetime({ offset: true }).describe('In the future'),
    end: z.iso.datetime({ offset: true }).describe('After start'),
  })
  .superRefine((w, ctx) => {
    const span = Date.parse(w.end) - Date.parse(w.start);
    if (span <= 0) ctx.addIssue({ code: 'custom', path: ['end'], message: 'must be after start', params: { rule: 'after_start' } });
    else if (span > MAX_PICKUP_WINDOW_DAYS * DAY_MS) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: `must be at most ${MAX_PICKUP_WINDOW_DAYS} days after start`, params: { rule: 'max_span' } });
    }
  })
  .describe(`When the courier may collect: start in the future, end after start, at most ${MAX_PICKUP_WINDOW_DAYS} days apart`);

const DeviceOrderBody = z
  .strictObject({
    orderType: z.enum(ORDER_TYPES).describe(`One of ${ORDER_TYPES.join(', ')}`),
    employeeId: Id.describe('The employee the order concerns; the order lands in their company and country'),
    productIds: z
      .array(ProductRef)
      .min(1)
      .max(MAX_DEVICES)
      .superRefine(unique((ref) => ref, (i) => [i], 'productIds.'))
      .describe(`1 to ${MAX_DEVICES} devices, by id or serial number, each once`),
    dispositions: z
      .array(Disposition)
      .min(1)
      .max(MAX_DEVICES)
      .superRefine(unique((d) => d.productId, (i) => [i, 'productId'], 'dispositions.'))
      .optional()
      .describe(`${collecting} only: at most one per returned device`),
    legalHold: LegalHold.optional(),
    pickupWindow: PickupWindow.optional().describe(`${collecting} only`),
  })
  .superRefine((body, ctx) => {
    if (COLLECTING_TYPES.includes(body.orderType)) return;
    for (const field of ['dispositions', 'pickupWindow'] as const) {
      if (body[field] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [field], message: `allowed only for ${collecting}`, params: { rule: 'allowed_for_type' } });
      }
    }
  });

const PurchaseItem = z.strictObject({
  itemId: Id.describe('Catalog item id (suggest_alternative_device lists them)'),
  quantity: z.number().int().min(1).max(MAX_QUANTITY).describe(`1 to ${MAX_QUANTITY}`),
  country: CountryCode.describe('Country the item ships to; the same for every item'),
});
const PurchaseItems = z
  .array(PurchaseItem)
  .min(1)
  .max(MAX_ITEMS)
  .superRefine(unique((item) => item.itemId, (i) => [i, 'itemId'], 'items.'))
  .describe(`1 to ${MAX_ITEMS} catalog items, each item once, all for one country`);

const EmployeePurchaseBody = z.strictObject({
  orderType: z.literal(PURCHASE_TYPES[0]),
  employeeId: Id.describe('The employee the devices are bought for (needs a delivery address in the items’ country)'),
  items: PurchaseItems,
  companyId: z.never({ error: "not accepted: the order lands in the employee's company" }).optional(),
});
const InventoryPurchaseBody = z.strictObject({
  orderType: z.literal(PURCHASE_TYPES[1]),
  employeeId: z.never({ error: 'not accepted: an inventory purchase concerns no employee' }).optional(),
  items: PurchaseItems,
  companyId: CompanyIdField,
});
const PurchaseOrderBody = z.discriminatedUnion('orderType', [EmployeePurchaseBody, InventoryPurchaseBody]);

const Violation = z.object({
  code: z.enum(VIOLATION_CODES),
  message: z.string(),
  field: z.string().optional().describe('The input field at fault'),
  productId: z.string().optional().describe('The device concerned'),
});

const STRUCTURES = `dispositions: [{ productId, action }] with action one of ${DISPOSITION_ACTIONS.join(', ')}, at most one per returned device (${collecting} only). legalHold: { caseId, reason, until? (YYYY-MM-DD) }; it refuses ${BLOCKED_BY_LEGAL_HOLD.join(' and ')}. pickupWindow: { start, end } ISO date-times, start in the future, end after start, at most ${MAX_PICKUP_WINDOW_DAYS} days apart (${collecting} only).`;

const DEVICE_RULES =
  'Rules: the employee exists in your companies (employee_not_found) and in your scope (employee_out_of_scope); every device exists in the employee’s company and is visible to you (device_not_found) and is on no other open order (device_in_open_order). Deployment: Available, unassigned devices (device_not_available) and a delivery address (employee_has_no_delivery_address). Offboarding, Collection: devices assigned to the employee (device_not_assigned_to_employee), who has at least one (employee_has_no_devices). Maintenance: devices assigned to the employee. Swap from Inventory: at least one assigned device (returned) and one Available device (the replacement) (swap_requires_return_and_replacement), and a delivery address. Dispositions name returned devices (disposition_device_not_in_order); a legal hold refuses wiping and recycling (legal_hold_blocks_disposition); the pickup window starts in the future (pickup_window_not_in_future).';

const PURCHASE_RULES =
  'Rules: each item exists in the catalog (catalog_item_not_found), is sold in the country (catalog_item_unavailable_in_country) with enough stock (insufficient_catalog_stock); all items ship to one country (items_multiple_countries). Purchase for Employee: the employee exists, is in your scope and has a delivery address, and the items ship to their country (items_country_not_employee_country). Purchase for Inventory: managers buy only into their regions (country_out_of_scope).';

export const orderWriteOperations: AnyOperation[] = [
  defineOperation({
    name: 'validate_order_constraints',
    cli: 'orders validate',
    title: 'Check whether an order can be placed',
    description: 'Checks an order without placing it: runs every rule of create_order (device orders) or create_purchase_order (purchases), keyed by orderType, and lists every violation under the stable code the creation would fail with. Returns { valid, violations }.',
    details: `A malformed body is refused as on creation (400). ${DEVICE_RULES} ${PURCHASE_RULES}`,
    capability: 'mcp:orders:read',
    readOnly: true,
    method: 'POST',
    path: '/v4/orders/validate',
    input: z.discriminatedUnion('orderType', [DeviceOrderBody, EmployeePurchaseBody, InventoryPurchaseBody]),
    output: z.object({
      valid: z.boolean(),
      orderType: z.enum([...ORDER_TYPES, ...PURCHASE_TYPES]),
      violations: z.array(Violation),
    }),
    handler: async ({ core, principal }, input) => (await orderRules()).validateOrder(core.db, principal, input, core.now()),
  }),
  defineOperation({
    name: 'create_order',
    cli: 'orders create',
    title: 'Place an order',
    description: `Places a device order for an employee (status Pending); its devices are held until it closes. dispositions and pickupWindow: ${collecting} only. Fails with order_constraints_violated listing every broken rule (validate_order_constraints checks first). Returns the order.`,
    details: `Each device gets a role: deliver (Deployment, the Available side of a Swap), return (Offboarding, Collection, the assigned side of a Swap) or service (Maintenance), and is held until the order is Completed or Cancelled. ${STRUCTURES} A broken rule is 422 order_constraints_violated whose details list every violation. ${DEVICE_RULES} The caller needs no mcp:orders:read for the answer, the order as get_order returns it.`,
    capability: 'mcp:orders:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/orders',
    successStatus: 201,
    input: DeviceOrderBody,
    output: OrderSchema,
    handler: async ({ core, principal }, input) => (await orderCreation()).createOrder(core, principal, input),
  }),
  defineOperation({
    name: 'create_purchase_order',
    cli: 'orders purchase',
    title: 'Buy catalog devices',
    description: 'Buys catalog items (from suggest_alternative_device) for an employee or for the company pool, all shipping to one country. Fails with order_constraints_violated listing every broken rule. Returns the order.',
    details: `items: 1 to ${MAX_ITEMS} of { itemId, quantity 1 to ${MAX_QUANTITY}, country }. The order stores each item with its catalog name, unit price, currency and lead time; it has no device requests. An admin of several companies passes companyId for an inventory purchase. A broken rule is 422 order_constraints_violated. ${PURCHASE_RULES} Returns the order as get_order does.`,
    capability: 'mcp:orders:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/orders/purchase',
    successStatus: 201,
    input: PurchaseOrderBody,
    output: OrderSchema,
    handler: async ({ core, principal }, input) => (await orderCreation()).createPurchaseOrder(core, principal, input),
  }),
  defineOperation({
    name: 'add_power_accessory',
    cli: 'orders accessories',
    title: 'Request a replacement charger',
    description: 'Requests a replacement charger for a device on an open order (a sub-order of type Accessory); returns the parent order. Name the device by productId or serialNumber, never a charger. Fails with expected_device_not_sku, device_not_on_order, order_closed or accessory_already_requested.',
    details: 'A catalog item id or a device that is itself a charger is 400 expected_device_not_sku. The device must be on the order (422 device_not_on_order) and the order open (422 order_closed); one open charger request per device and order (409 accessory_already_requested). The sub-order starts Pending, the order records accessory_requested, and its subOrders show the new one.',
    capability: 'mcp:orders:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/orders/:id/accessories',
    successStatus: 201,
    input: z
      .strictObject({
        id: Id.describe('Order id'),
        productId: Id.optional().describe('Id of the device that needs a charger'),
        serialNumber: SerialNumber.optional().describe('Serial number of the device that needs a charger'),
      })
      .refine((v) => (v.productId === undefined) !== (v.serialNumber === undefined), {
        message: 'give exactly one of productId or serialNumber',
        path: ['productId'],
        params: { rule: 'exactly_one' },
      }),
    output: OrderSchema,
    handler: async ({ core, principal }, { id, ...ref }) => (await orderCreation()).addPowerAccessory(core, principal, id, ref),
  }),
];
