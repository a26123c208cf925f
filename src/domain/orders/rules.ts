import type { Principal } from '../../access/principal.js';
import { resolveWriteCompany } from '../../access/principal.js';
import { deviceScope, employeeScope, orderScope } from '../../access/scope.js';
import type { Queryable } from '../../store/db.js';
import { sql } from '../../store/sql.js';
import { badRequest, type FieldProblem } from '../../kit/errors.js';
import {
  BLOCKED_BY_LEGAL_HOLD,
  PURCHASE_TYPES,
  type DeviceRole,
  type DispositionAction,
  type OrderType,
  type PurchaseType,
  type ViolationCode,
} from './model.js';

/**
 * The business rules an order must pass, shared by validate_order_constraints and the creations:
 * every rule is evaluated and every violation reported, each under a stable code.
 */


export interface Violation {
  code: ViolationCode;
  message: string;
  /** The input field at fault, as a path (`productIds.2`, `items.0.country`). */
  field?: string;
  /** The device concerned: its id once resolved, else the reference as given. */
  productId?: string;
}

/** Order types that ship to the employee and so need their delivery address. */
const DELIVERING_TYPES: readonly OrderType[] = ['Deployment', 'Swap from Inventory'];

export interface Disposition {
  productId: string;
  action: DispositionAction;
}
export interface LegalHold {
  caseId: string;
  reason: string;
  until?: string | undefined;
}
export interface PickupWindow {
  start: string;
  end: string;
}

export interface DeviceOrderInput {
  orderType: OrderType;
  employeeId: string;
  /** Device ids or serial numbers. */
  productIds: string[];
  dispositions?: Disposition[] | undefined;
  legalHold?: LegalHold | undefined;
  pickupWindow?: PickupWindow | undefined;
}

export interface PurchaseItemInput {
  itemId: string;
  quantity: number;
  country: string;
}
/** An employee purchase lands in the employee's company; an inventory purchase in `companyId` (resolveWriteCompany). */
export type PurchaseOrderInput =
  | { orderType: 'Purchase for Employee'; employeeId: string; items: PurchaseItemInput[] }
  | { orderType: 'Purchase for Inventory'; companyId?: string | undefined; items: PurchaseItemInput[] };

export type OrderInput = DeviceOrderInput | PurchaseOrderInput;

export interface ValidationResult {
  valid: boolean;
  orderType: OrderType | PurchaseType;
  violations: Violation[];
}

interface EmployeeFacts {
  id: string;
  companyId: string;
  country: string | null;
  hasDeliveryAddress: boolean;
  inScope: boolean;
  assignedDevices: number;
}

/**
 * Looked up across all the caller's companies, then checked against their scope, so that an
 * employee a manager may not order for is named as out of scope rather than unknown.
 */
async function findEmployee(db: Queryable, p: Principal, id: string): Promise<EmployeeFacts | undefined> {
  const [employee] = await db.query<EmployeeFacts>(sql`
    SELECT e.id, e.company_id AS "companyId", e.country,
      (coalesce(e.address_one, '') <> '' AND coalesce(e.city, '') <> '' AND coalesce(e.zip_code, '') <> ''
        AND coalesce(e.country, '') <> '') AS "hasDeliveryAddress",
      coalesce(${employeeScope(p, p.companyIds)}, false) AS "inScope",
      (SELECT count(*) FROM devices d WHERE d.employee_id = e.id) AS "assignedDevices"
    FROM employees e WHERE e.id = ${id} AND e.company_id = ANY(${p.companyIds}::text[])`);
  return employee;
}

/**
 * The employee an order concerns, or undefined when the caller may not order for them; rules
 * that depend on the employee are then skipped, so nothing about them leaks.
 */
async function checkEmployee(
  db: Queryable,
  p: Principal,
  id: string,
  needsDeliveryAddress: boolean,
  violations: Violation[],
): Promise<EmployeeFacts | undefined> {
  const employee = await findEmployee(db, p, id);
  if (!employee) {
    violations.push({ code: 'employee_not_found', message: `No employee ${id} in your companies`, field: 'employeeId' });
    return undefined;
  }
  if (!employee.inScope) {
    violations.push({ code: 'employee_out_of_scope', message: `Employee ${id} is outside your teams and regions`, field: 'employeeId' });
    return undefined;
  }
  if (needsDeliveryAddress && !employee.hasDeliveryAddress) {
    violations.push({
      code: 'employee_has_no_delivery_address',
      message: `Employee ${id} has no complete delivery address (addressOne, city, zipCode and country): update the employee first`,
      field: 'employeeId',
    });
  }
  return employee;
}

interface DeviceFacts {
  id: string;
  serialNumber: string;
  status: string;
  employeeId: string | null;
  held: boolean;
  /** The holding order, when the caller may see it. */
  heldByVisible: string | null;
}

/**
 * Resolves each reference (id, or serial number within `companyIds`) among the devices the
 * caller can see; a reference matching nothing is absent from the map.
 */
async function resolveDevices(db: Queryable, p: Principal, companyIds: readonly string[], refs: string[]): Promise<Map<string, DeviceFacts>> {
  const rows = await db.query<DeviceFacts>(sql`
    SELECT d.id, d.serial_number AS "serialNumber", d.status, d.employee_id AS "employeeId",
      (h.order_id IS NOT NULL) AS held,
      CASE WHEN ${orderScope(p, companyIds, 'holder')} THEN holder.id END AS "heldByVisible"
    FROM devices d
      LEFT JOIN device_holds h ON h.device_id = d.id
      LEFT JOIN orders holder ON holder.id = h.order_id
    WHERE (d.id = ANY(${refs}::text[]) OR d.serial_number = ANY(${refs}::text[]))
      AND ${deviceScope(p, companyIds)}
    ORDER BY d.id`);
  const resolved = new Map<string, DeviceFacts>();
  for (const ref of refs) {
    const device = rows.find((d) => d.id === ref) ?? rows.find((d) => d.serialNumber === ref);
    if (device) resolved.set(ref, device);
  }
  return resolved;
}

/** Two references (say an id and a serial number) naming one device is a malformed body, as a literal repeat is. */
function refuseRepeats(entries: Array<{ key: string; field: string }>, what: string): void {
  const first = new Map<string, string>();
  const problems: FieldProblem[] = [];
  for (const { key, field } of entries) {
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, field);
    else problems.push({ field, rule: 'unique', message: `names the same ${what} as ${earlier}` });
  }
  if (problems.length > 0) {
    throw badRequest('validation_failed', `Repeated ${what}: ${problems.map((x) => `${x.field} ${x.message}`).join('; ')}`, problems);
  }
}

const isAvailable = (d: DeviceFacts) => d.status === 'Available' && d.employeeId === null;

/** The role a device plays in an order of this type, or the violation that keeps it out. */
function roleOf(type: OrderType, device: DeviceFacts, employee: EmployeeFacts | undefined): DeviceRole | Omit<Violation, 'field'> {
  const notAvailable = { code: 'device_not_available', productId: device.id } as const;
  const assigned = employee !== undefined && device.employeeId === employee.id;
  switch (type) {
    case 'Deployment':
      return isAvailable(device)
        ? 'deliver'
        : { ...notAvailable, message: `Device ${device.id} is ${device.status}${device.employeeId ? ' and assigned' : ''}: a deployment needs an Available, unassigned device` };
    case 'Offboarding':
    case 'Collection':
    case 'Maintenance': {
      const role = type === 'Maintenance' ? 'service' : 'return';
      if (!employee || assigned) return role;
      return { code: 'device_not_assigned_to_employee', productId: device.id, message: `Device ${device.id} is not assigned to employee ${employee.id}` };
    }
    case 'Swap from Inventory':
      if (isAvailable(device)) return 'deliver';
      // Without an employee to compare with, a device in use can only be taken as the returned side.
      if (assigned || !employee) return 'return';
      return {
        ...notAvailable,
        message: `Device ${device.id} is neither assigned to the employee (to return) nor Available (to deliver as the replacement)`,
      };
  }
}

export interface PlannedDevice {
  id: string;
  role: DeviceRole;
  /** Where the body named it (`productIds.3`). */
  field: string;
}

/** Every violation found; the plan to write exists only when there are none. */
export interface Checked<Plan> {
  violations: Violation[];
  plan: Plan | null;
}

export interface DeviceOrderPlan {
  companyId: string;
  employeeId: string;
  country: string | null;
  devices: PlannedDevice[];
  /** Dispositions with each productId resolved to the device id. */
  dispositions: Disposition[] | null;
}

/** Checks a Deployment, Offboarding, Collection, Maintenance or Swap from Inventory order. */
export async function checkDeviceOrder(db: Queryable, p: Principal, input: DeviceOrderInput, now: Date): Promise<Checked<DeviceOrderPlan>> {
  const violations: Violation[] = [];
  const type = input.orderType;
  const employee = await checkEmployee(db, p, input.employeeId, DELIVERING_TYPES.includes(type), violations);
  const companyIds = employee ? [employee.companyId] : p.companyIds;
  const resolved = await resolveDevices(db, p, companyIds, input.productIds);
  refuseRepeats(
    input.productIds.flatMap((ref, i) => {
      const device = resolved.get(ref);
      return device ? [{ key: device.id, field: `productIds.${i}` }] : [];
    }),
    'device',
  );

  const devices: Array<PlannedDevice & { serialNumber: string; ref: string }> = [];
  input.productIds.forEach((ref, i) => {
    const field = `productIds.${i}`;
    const device = resolved.get(ref);
    if (!device) {
      violations.push({ code: 'device_not_found', message: `No device ${ref} (id or serial number) in the employee's company that you can see`, field, productId: ref });
      return;
    }
    if (device.held) {
      const holder = device.heldByVisible ? `open order ${device.heldByVisible}` : 'another open order';
      violations.push({ code: 'device_in_open_order', message: `Device ${device.id} is already on ${holder}`, field, productId: device.id });
    }
    const role = roleOf(type, device, employee);
    if (typeof role === 'string') devices.push({ id: device.id, serialNumber: device.serialNumber, ref, role, field });
    else violations.push({ ...role, field });
  });

  if (employee && (type === 'Offboarding' || type === 'Collection') && employee.assignedDevices === 0) {
    violations.push({ code: 'employee_has_no_devices', message: `Employee ${employee.id} has no assigned devices to ${type.toLowerCase()}`, field: 'employeeId' });
  }
  if (employee && type === 'Swap from Inventory') {
    const roles = new Set(devices.map((d) => d.role));
    if (!roles.has('return') || !roles.has('deliver')) {
      violations.push({
        code: 'swap_requires_return_and_replacement',
        message: 'A swap needs at least one device assigned to the employee (returned) and one Available device (the replacement)',
        field: 'productIds',
      });
    }
  }

  const returned = devices.filter((d) => d.role === 'return');
  const dispositions = input.dispositions?.map((disposition, i) => {
    const device = returned.find((d) => [d.id, d.serialNumber, d.ref].includes(disposition.productId));
    if (!device) {
      violations.push({
        code: 'disposition_device_not_in_order',
        message: `Disposition for ${disposition.productId}: that device is not one this order returns`,
        field: `dispositions.${i}.productId`,
        productId: disposition.productId,
      });
    }
    if (input.legalHold && BLOCKED_BY_LEGAL_HOLD.includes(disposition.action)) {
      violations.push({
        code: 'legal_hold_blocks_disposition',
        message: `Legal hold ${input.legalHold.caseId} preserves the device's data: ${disposition.action} is refused (use return_to_stock or keep)`,
        field: `dispositions.${i}.action`,
        productId: device?.id ?? disposition.productId,
      });
    }
    return { productId: device?.id ?? disposition.productId, action: disposition.action };
  });
  if (dispositions) refuseRepeats(dispositions.map((d, i) => ({ key: d.productId, field: `dispositions.${i}.productId` })), 'device');

  if (input.pickupWindow && Date.parse(input.pickupWindow.start) <= now.getTime()) {
    violations.push({
      code: 'pickup_window_not_in_future',
      message: `The pickup window must start in the future (now is ${now.toISOString()})`,
      field: 'pickupWindow.start',
    });
  }

  if (!employee || violations.length > 0) return { violations, plan: null };
  return {
    violations,
    plan: {
      companyId: employee.companyId,
      employeeId: employee.id,
      country: employee.country,
      devices: devices.map(({ id, role, field }) => ({ id, role, field })),
      dispositions: dispositions ?? null,
    },
  };
}

export interface PurchasedItem {
  itemId: string;
  name: string;
  manufacturer: string;
  productType: string;
  quantity: number;
  country: string;
  unitPrice: number;
  currency: string;
  leadTimeDays: number;
}

export interface PurchaseOrderPlan {
  companyId: string;
  employeeId: string | null;
  country: string;
  items: PurchasedItem[];
}

interface CatalogRow {
  id: string;
  name: string;
  manufacturer: string;
  productType: string;
  price: number;
  currency: string;
  country: string | null;
  stock: number | null;
  leadTimeDays: number | null;
}

/** An inventory purchase lands in a country; a manager may buy only into their regions (else they could not see the order). */
function inventoryCountryInScope(p: Principal, country: string): boolean {
  if (p.role === 'admin') return true;
  return p.role === 'manager' && p.regions.includes(country);
}

/** Checks a Purchase for Employee or Purchase for Inventory order against the master catalog. */
export async function checkPurchaseOrder(db: Queryable, p: Principal, input: PurchaseOrderInput): Promise<Checked<PurchaseOrderPlan>> {
  const violations: Violation[] = [];
  const countries = [...new Set(input.items.map((item) => item.country))];
  const country = countries[0] ?? '';
  if (countries.length > 1) {
    violations.push({
      code: 'items_multiple_countries',
      message: `All items of one order ship to one country; these name ${countries.join(', ')}: place one order per country`,
      field: 'items',
    });
  }

  let companyId: string | undefined;
  let employee: EmployeeFacts | undefined;
  if (input.orderType === 'Purchase for Employee') {
    employee = await checkEmployee(db, p, input.employeeId, true, violations);
    companyId = employee?.companyId;
    if (employee?.country && countries.length === 1 && country !== employee.country) {
      violations.push({
        code: 'items_country_not_employee_country',
        message: `The items ship to ${country} but employee ${employee.id} lives in ${employee.country}: order them for ${employee.country}`,
        field: 'items.0.country',
      });
    }
  } else {
    companyId = resolveWriteCompany(p, input.companyId);
    const outside = countries.filter((c) => !inventoryCountryInScope(p, c));
    if (outside.length > 0) {
      violations.push({
        code: 'country_out_of_scope',
        message: `You may buy into inventory only in your regions (${p.regions.join(', ') || 'none'}), not ${outside.join(', ')}`,
        field: 'items',
      });
    }
  }

  const rows = await db.query<CatalogRow>(sql`
    SELECT i.id, i.name, i.manufacturer, i.product_type AS "productType", i.price, i.currency,
      a.country, a.stock, a.lead_time_days AS "leadTimeDays"
    FROM catalog_items i LEFT JOIN catalog_availability a ON a.item_id = i.id AND a.country = ANY(${countries}::text[])
    WHERE i.id = ANY(${input.items.map((item) => item.itemId)}::text[])`);
  const items: PurchasedItem[] = [];
  input.items.forEach((item, i) => {
    const entries = rows.filter((r) => r.id === item.itemId);
    const offer = entries.find((r) => r.country === item.country);
    if (entries.length === 0) {
      violations.push({ code: 'catalog_item_not_found', message: `No catalog item ${item.itemId}`, field: `items.${i}.itemId` });
    } else if (!offer || offer.stock === null || offer.leadTimeDays === null) {
      violations.push({
        code: 'catalog_item_unavailable_in_country',
        message: `Catalog item ${item.itemId} is not sold in ${item.country} (suggest_alternative_device lists what is)`,
        field: `items.${i}.country`,
      });
    } else {
      if (item.quantity > offer.stock) {
        violations.push({
          code: 'insufficient_catalog_stock',
          message: `Catalog item ${item.itemId} has ${offer.stock} in stock in ${item.country}, fewer than the ${item.quantity} ordered`,
          field: `items.${i}.quantity`,
        });
      }
      items.push({
        itemId: offer.id,
        name: offer.name,
        manufacturer: offer.manufacturer,
        productType: offer.productType,
        quantity: item.quantity,
        country: item.country,
        unitPrice: offer.price,
        currency: offer.currency,
        leadTimeDays: offer.leadTimeDays,
      });
    }
  });
  if (companyId === undefined || violations.length > 0) return { violations, plan: null };
  return { violations, plan: { companyId, employeeId: employee?.id ?? null, country, items } };
}

export function isPurchase(input: OrderInput): input is PurchaseOrderInput {
  return (PURCHASE_TYPES as readonly string[]).includes(input.orderType);
}

/** validate_order_constraints: the creation's own checks, without creating anything. */
export async function validateOrder(db: Queryable, p: Principal, input: OrderInput, now: Date): Promise<ValidationResult> {
  const { violations } = isPurchase(input) ? await checkPurchaseOrder(db, p, input) : await checkDeviceOrder(db, p, input, now);
  return { valid: violations.length === 0, orderType: input.orderType, violations };
}
