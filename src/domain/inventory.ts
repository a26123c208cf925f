import type { Principal } from '../access/principal.js';
import { readCompanies, resolveWriteCompany } from '../access/principal.js';
import { deviceScope, employeeScope, wholeCompanies } from '../access/scope.js';
import type { Db, Queryable } from '../store/db.js';
import { pgErrorCode, UNIQUE_VIOLATION } from '../store/db.js';
import { newId } from '../store/ids.js';
import { paginate, type Page, type PageQuerySpec, type PageRequest } from '../store/paging.js';
import { and, containsText, join, sql, type Sql } from '../store/sql.js';
import { AppError, badRequest, conflict, notFound, unprocessable, type FieldProblem } from '../kit/errors.js';
import {
  PIN_TYPES,
  PRODUCT_TYPES,
  specScore,
  type DEVICE_CONDITIONS,
  type DEVICE_STATUSES,
  type DeviceSpecs,
  type ProductType,
} from './device-types.js';
import { encryptSecret } from './pin-crypto.js';

export type DeviceStatus = (typeof DEVICE_STATUSES)[number];
export type DeviceCondition = (typeof DEVICE_CONDITIONS)[number];

/** In stock means available to hand out; every other status is in use or out of circulation. */
const IN_STOCK: DeviceStatus = 'Available';

export interface DeviceRecord {
  id: string;
  companyId: string;
  serialNumber: string;
  productType: ProductType;
  category: string;
  manufacturer: string;
  model: string;
  specs: DeviceSpecs;
  specScore: number;
  condition: DeviceCondition;
  status: DeviceStatus;
  inStock: boolean;
  location: { country: string | null; companyAddressId: string | null; alias: string | null; city: string | null };
  assignment: { employeeId: string; displayName: string; assignedAt: string | null } | null;
  pinCodeSet: boolean;
  pinCodeSetAt: string | null;
  createdAt: string;
  updatedAt: string;
}

interface DeviceRow extends Omit<DeviceRecord, 'inStock' | 'location' | 'assignment'> {
  country: string | null;
  companyAddressId: string | null;
  addressAlias: string | null;
  addressCity: string | null;
  employeeId: string | null;
  employeeName: string | null;
  assignedAt: string | null;
}

// The one select list behind every device read; the PIN ciphertext itself is never selected.
const DEVICE_COLUMNS = sql`d.id, d.company_id AS "companyId", d.serial_number AS "serialNumber",
  d.product_type AS "productType", d.category, d.manufacturer, d.model, d.specs, d.spec_score AS "specScore",
  d.condition, d.status, d.country, d.company_address_id AS "companyAddressId",
  addr.alias AS "addressAlias", addr.city AS "addressCity",
  d.employee_id AS "employeeId", holder.display_name AS "employeeName", d.assigned_at AS "assignedAt",
  (d.pin_ciphertext IS NOT NULL) AS "pinCodeSet", d.pin_set_at AS "pinCodeSetAt",
  d.created_at AS "createdAt", d.updated_at AS "updatedAt"`;

const DEVICE_FROM = sql`devices d
  LEFT JOIN company_addresses addr ON addr.id = d.company_address_id
  LEFT JOIN employees holder ON holder.id = d.employee_id`;

function toDevice(row: DeviceRow): DeviceRecord {
  const { country, companyAddressId, addressAlias, addressCity, employeeId, employeeName, assignedAt, ...device } = row;
  return {
    ...device,
    inStock: device.status === IN_STOCK,
    location: { country, companyAddressId, alias: addressAlias, city: addressCity },
    assignment: employeeId === null ? null : { employeeId, displayName: employeeName ?? '', assignedAt },
  };
}

async function selectDevices(db: Queryable, where: Sql, order: Sql = sql`d.id`): Promise<DeviceRecord[]> {
  const rows = await db.query<DeviceRow>(sql`SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE ${where} ORDER BY ${order}`);
  return rows.map(toDevice);
}

/** Re-reads devices just written, in the order of `ids`. */
async function devicesByIds(db: Queryable, ids: string[]): Promise<DeviceRecord[]> {
  return selectDevices(db, sql`d.id = ANY(${ids}::text[])`, sql`array_position(${ids}::text[], d.id)`);
}

async function pageOfDevices(
  db: Queryable,
  where: Sql,
  filters: Record<string, unknown>,
  input: PageRequest,
  everyRowOf?: PageQuerySpec['everyRowOf'],
): Promise<Page<DeviceRecord>> {
  const page = await paginate<DeviceRow>(db, { columns: DEVICE_COLUMNS, from: DEVICE_FROM, where, key: sql`d.id`, pageIndex: 'devices_company_id_idx', filters, everyRowOf }, input);
  return { ...page, rows: page.rows.map(toDevice) };
}

export interface InventoryFilters {
  query?: string | undefined;
  inStock?: boolean | undefined;
  category?: string | undefined;
  productType?: ProductType | undefined;
  country?: string | undefined;
  status?: DeviceStatus | undefined;
  companyId?: string | undefined;
}

export async function searchInventory(db: Queryable, p: Principal, input: InventoryFilters & PageRequest) {
  const companies = readCompanies(p, input.companyId);
  const filters = [deviceScope(p, companies)];
  if (input.query) {
    filters.push(containsText(input.query, [sql`d.serial_number`, sql`(d.manufacturer || ' ' || d.model)`]));
  }
  if (input.inStock !== undefined) filters.push(sql`(d.status = ${IN_STOCK}) = ${input.inStock}`);
  if (input.category) filters.push(sql`d.category = ${input.category}`);
  if (input.productType) filters.push(sql`d.product_type = ${input.productType}`);
  if (input.country) filters.push(sql`d.country = ${input.country}`);
  if (input.status) filters.push(sql`d.status = ${input.status}`);
  const { query, inStock, category, productType, country, status, companyId } = input;
  const everyRowOf = wholeCompanies('devices', companies, filters, p.role === 'admin');
  return pageOfDevices(db, and(filters), { query, inStock, category, productType, country, status, companyId }, input, everyRowOf);
}

interface VisibleEmployee {
  id: string;
  companyId: string;
  country: string | null;
}

/** An employee the caller may see; anything else is 404, whether absent or out of scope. */
async function visibleEmployee(db: Queryable, p: Principal, id: string): Promise<VisibleEmployee> {
  const [employee] = await db.query<VisibleEmployee>(sql`
    SELECT e.id, e.company_id AS "companyId", e.country FROM employees e
    WHERE e.id = ${id} AND ${employeeScope(p, p.companyIds)}`);
  if (!employee) throw notFound('Employee', id);
  return employee;
}

export async function getAssignedDevices(db: Queryable, p: Principal, employeeId: string, input: PageRequest) {
  await visibleEmployee(db, p, employeeId);
  const where = and([sql`d.employee_id = ${employeeId}`, deviceScope(p, p.companyIds)]);
  return pageOfDevices(db, where, { employeeId }, input);
}

/** How a caller names a device: by id, by serial number, or (get_product) one value that may be either. */
export interface DeviceRef {
  productId?: string | undefined;
  serialNumber?: string | undefined;
  companyId?: string | undefined;
}

/**
 * Serial numbers are unique per company only, so a serial can match one device in each company
 * an admin reaches: that is a 409 naming the companies, resolved by passing `companyId`.
 */
async function findDevice(db: Queryable, p: Principal, ref: DeviceRef, field: string): Promise<DeviceRecord> {
  const devices = await selectDevices(
    db,
    sql`(d.id = ${ref.productId ?? null} OR d.serial_number = ${ref.serialNumber ?? null})
      AND ${deviceScope(p, readCompanies(p, ref.companyId))}`,
  );
  const byId = devices.find((d) => d.id === ref.productId);
  if (byId) return byId;
  const [only, ...others] = devices;
  if (!only) throw notFound('Device', ref.productId ?? ref.serialNumber ?? '');
  if (others.length > 0) {
    const companyIds = devices.map((d) => d.companyId);
    throw conflict(
      'ambiguous_serial',
      `Serial number ${only.serialNumber} matches devices in several companies (${companyIds.join(', ')}): pass companyId to choose one`,
      [{ field, rule: 'ambiguous', message: `matches a device in each of ${companyIds.join(', ')}`, companyIds }],
    );
  }
  return only;
}

export async function getProduct(db: Queryable, p: Principal, id: string, companyId: string | undefined) {
  return findDevice(db, p, { productId: id, serialNumber: id, companyId }, 'id');
}

export async function setPinCode(db: Queryable, secretKey: Buffer, p: Principal, ref: DeviceRef, pinCode: string) {
  const field = ref.productId !== undefined ? 'productId' : 'serialNumber';
  const device = await findDevice(db, p, ref, field);
  if (!PIN_TYPES.includes(device.productType)) {
    const accepted = PIN_TYPES.join(', ');
    throw unprocessable(
      'pin_not_supported_for_type',
      `Device ${device.id} is of type ${device.productType}, which takes no PIN; PINs are accepted only for ${accepted}`,
      [{ field, rule: 'pin_supported_type', message: `${device.productType} is not one of ${accepted}`, productType: device.productType, acceptedTypes: PIN_TYPES }],
    );
  }
  // The device id is bound into the ciphertext, so a PIN copied onto another row does not decrypt.
  await db.query(sql`UPDATE devices SET pin_ciphertext = ${encryptSecret(secretKey, pinCode, device.id)},
    pin_set_at = now(), updated_at = now() WHERE id = ${device.id}`);
  const [updated] = await devicesByIds(db, [device.id]);
  return updated!;
}

export interface DeviceOption {
  rank: number;
  manufacturer: string;
  model: string;
  productType: ProductType;
  specs: DeviceSpecs;
  specScore: number;
  inStock: number;
  countries: string[];
  sampleProductIds: string[];
}

/**
 * Models in the caller's visible stock, best specification first, then most units in stock,
 * then by name. A model's specs are those of its best-specified unit.
 */
export async function deviceOptions(
  db: Queryable,
  p: Principal,
  input: { productType: ProductType; country?: string | undefined; companyId?: string | undefined; limit: number },
): Promise<DeviceOption[]> {
  const filters = [
    sql`d.status = ${IN_STOCK}`,
    sql`d.product_type = ${input.productType}`,
    deviceScope(p, readCompanies(p, input.companyId)),
  ];
  if (input.country) filters.push(sql`d.country = ${input.country}`);
  const rows = await db.query<Omit<DeviceOption, 'rank'>>(sql`
    SELECT d.manufacturer, d.model, d.product_type AS "productType",
      (array_agg(d.specs ORDER BY d.spec_score DESC, d.id))[1] AS specs,
      max(d.spec_score) AS "specScore",
      count(*) AS "inStock",
      coalesce(array_agg(DISTINCT d.country ORDER BY d.country) FILTER (WHERE d.country IS NOT NULL), '{}'::text[]) AS countries,
      (array_agg(d.id ORDER BY d.id))[1:5] AS "sampleProductIds"
    FROM devices d
    WHERE ${and(filters)}
    GROUP BY d.manufacturer, d.model, d.product_type
    ORDER BY "specScore" DESC, "inStock" DESC, d.manufacturer, d.model
    LIMIT ${input.limit}`);
  return rows.map((row, i) => ({ rank: i + 1, ...row }));
}

export interface CatalogSuggestion {
  itemId: string;
  name: string;
  manufacturer: string;
  productType: ProductType;
  category: string;
  specs: DeviceSpecs;
  specScore: number;
  price: number;
  currency: string;
  stock: number;
  leadTimeDays: number;
}

/** Catalog items purchasable in a country: quickest delivery first, then best specification. */
export async function suggestAlternatives(
  db: Queryable,
  input: { country: string; productType?: ProductType | undefined; limit: number },
): Promise<CatalogSuggestion[]> {
  const filters = [sql`a.country = ${input.country}`, sql`a.stock > 0`];
  if (input.productType) filters.push(sql`i.product_type = ${input.productType}`);
  return db.query<CatalogSuggestion>(sql`
    SELECT i.id AS "itemId", i.name, i.manufacturer, i.product_type AS "productType", i.category, i.specs,
      i.spec_score AS "specScore", i.price, i.currency, a.stock, a.lead_time_days AS "leadTimeDays"
    FROM catalog_items i JOIN catalog_availability a ON a.item_id = i.id
    WHERE ${and(filters)}
    ORDER BY a.lead_time_days, i.spec_score DESC, i.name, i.id
    LIMIT ${input.limit}`);
}

export interface NewDevice {
  serialNumber: string;
  productType: ProductType;
  manufacturer: string;
  model: string;
  specs: DeviceSpecs;
  condition: DeviceCondition;
}

export interface NewStockDevice extends NewDevice {
  country?: string | undefined;
  companyAddressId?: string | undefined;
}

interface DeviceInsert extends NewDevice {
  status: DeviceStatus;
  country: string | null;
  companyAddressId: string | null;
  employeeId: string | null;
}

function serialsTaken(companyId: string, problems: FieldProblem[]) {
  return conflict(
    'serial_number_taken',
    `Serial numbers must be unique within company ${companyId}: ${problems.map((x) => `${x.field} ${x.message}`).join('; ')}`,
    problems,
  );
}

/** Refuses serials repeated within the request or already registered in the company. */
async function assertSerialsFree(db: Queryable, companyId: string, entries: Array<{ serialNumber: string; field: string }>) {
  const serials = [...new Set(entries.map((x) => x.serialNumber))];
  const taken = new Set(
    (await db.query<{ serial: string }>(sql`SELECT serial_number AS serial FROM devices
      WHERE company_id = ${companyId} AND serial_number = ANY(${serials}::text[])`)).map((r) => r.serial),
  );
  const firstField = new Map<string, string>();
  const problems: FieldProblem[] = [];
  for (const { serialNumber, field } of entries) {
    const earlier = firstField.get(serialNumber);
    if (taken.has(serialNumber)) {
      problems.push({ field, rule: 'unique', message: `${serialNumber} is already registered in this company` });
    } else if (earlier !== undefined) {
      problems.push({ field, rule: 'unique', message: `${serialNumber} repeats ${earlier} in this request` });
    }
    if (earlier === undefined) firstField.set(serialNumber, field);
  }
  if (problems.length > 0) throw serialsTaken(companyId, problems);
}

/** Inserts in one statement; a serial registered concurrently still surfaces as 409, not 500. */
async function insertDevices(db: Queryable, companyId: string, devices: DeviceInsert[]): Promise<string[]> {
  const ids = devices.map(() => newId('dev'));
  const rows = devices.map(
    (d, i) => sql`(${ids[i]}, ${companyId}, ${d.serialNumber}, ${d.productType}, ${PRODUCT_TYPES[d.productType]},
      ${d.manufacturer}, ${d.model}, ${JSON.stringify(d.specs)}::jsonb, ${specScore(d.specs)}, ${d.condition}, ${d.status},
      ${d.country}, ${d.companyAddressId}, ${d.employeeId}, ${d.employeeId === null ? null : sql`now()`})`,
  );
  try {
    await db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model,
        specs, spec_score, condition, status, country, company_address_id, employee_id, assigned_at)
      VALUES ${join(rows, ', ')}`);
  } catch (error) {
    if (pgErrorCode(error) === UNIQUE_VIOLATION) {
      throw serialsTaken(companyId, [{ field: 'serialNumber', rule: 'unique', message: 'was registered concurrently; retry to see which' }]);
    }
    throw error;
  }
  return ids;
}

/**
 * The location country of each new stock device: its own, or its address's. An address must be
 * one of the company's, and a country given alongside it must agree with it.
 */
async function stockCountries(db: Queryable, companyId: string, products: NewStockDevice[]): Promise<Array<string | null>> {
  const addressIds = [...new Set(products.flatMap((x) => (x.companyAddressId === undefined ? [] : [x.companyAddressId])))];
  const addressCountry = new Map(
    (await db.query<{ id: string; country: string }>(sql`SELECT id, country FROM company_addresses
      WHERE company_id = ${companyId} AND id = ANY(${addressIds}::text[])`)).map((a) => [a.id, a.country]),
  );
  const missing: FieldProblem[] = [];
  const mismatched: FieldProblem[] = [];
  const countries = products.map((x, i) => {
    if (x.companyAddressId === undefined) return x.country ?? null;
    const country = addressCountry.get(x.companyAddressId);
    if (country === undefined) {
      missing.push({ field: `products.${i}.companyAddressId`, rule: 'exists', message: `no address ${x.companyAddressId} in company ${companyId}` });
    } else if (x.country !== undefined && x.country !== country) {
      mismatched.push({ field: `products.${i}.country`, rule: 'matches_address', message: `the address is in ${country}, not ${x.country}` });
    }
    return country ?? null;
  });
  if (missing.length > 0) {
    throw new AppError(404, 'company_address_not_found', `Unknown company address: ${missing.map((x) => x.field).join(', ')}`, missing);
  }
  if (mismatched.length > 0) {
    throw badRequest('country_mismatch', `Country differs from the address's country: ${mismatched.map((x) => x.field).join(', ')}`, mismatched);
  }
  return countries;
}

/** Registers stock all-or-nothing: any bad row leaves nothing written. */
export async function registerProducts(db: Db, p: Principal, input: { companyId?: string | undefined; products: NewStockDevice[] }) {
  const companyId = resolveWriteCompany(p, input.companyId);
  return db.transaction(async (tx) => {
    const countries = await stockCountries(tx, companyId, input.products);
    await assertSerialsFree(tx, companyId, input.products.map((x, i) => ({ serialNumber: x.serialNumber, field: `products.${i}.serialNumber` })));
    const ids = await insertDevices(
      tx,
      companyId,
      input.products.map((x, i) => ({
        ...x,
        status: IN_STOCK,
        country: countries[i] ?? null,
        companyAddressId: x.companyAddressId ?? null,
        employeeId: null,
      })),
    );
    return devicesByIds(tx, ids);
  });
}

/** Records a device an employee already uses (v2 productInUse): assigned to them, located in their country. */
export async function registerDeviceInUse(db: Db, p: Principal, employeeId: string, device: NewDevice) {
  return db.transaction(async (tx) => {
    const employee = await visibleEmployee(tx, p, employeeId);
    await assertSerialsFree(tx, employee.companyId, [{ serialNumber: device.serialNumber, field: 'serialNumber' }]);
    const ids = await insertDevices(tx, employee.companyId, [
      { ...device, status: 'Assigned', country: employee.country, companyAddressId: null, employeeId },
    ]);
    const [created] = await devicesByIds(tx, ids);
    return created!;
  });
}
