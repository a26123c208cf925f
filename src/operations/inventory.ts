import { z } from 'zod';
import type { AnyOperation } from './operation.js';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import {
  CompanyIdField,
  CountryCode,
  envelopeOf,
  Id,
  listEnvelope,
  MAX_PAGE_SIZE,
  PageFields,
  QueryBoolean,
  SearchQuery,
  Text,
  Timestamp,
} from './common.js';
import { CATEGORIES, DEVICE_CONDITIONS, DEVICE_STATUSES, PIN_TYPES, PRODUCT_TYPE_NAMES } from '../domain/device-types.js';

const inventory = onDemand(() => import('../domain/inventory.js'));

const SerialNumber = Text(64, 'Serial number; unique within a company, usable wherever productId is');
const ProductType = z.enum(PRODUCT_TYPE_NAMES).describe(`Device type: ${PRODUCT_TYPE_NAMES.join(', ')}`);
const Category = z.enum(CATEGORIES).describe(`Inventory category: ${CATEGORIES.join(', ')}`);
const Status = z.enum(DEVICE_STATUSES).describe(`Device status: ${DEVICE_STATUSES.join(', ')}`);
const Condition = z.enum(DEVICE_CONDITIONS);

const Specs = z
  .strictObject({
    cpu: Text(100, 'Processor').optional(),
    ramGb: z.number().int().min(0).max(8192).optional(),
    storageGb: z.number().int().min(0).max(1_048_576).optional(),
    screenInches: z.number().positive().max(200).optional(),
    releaseYear: z.number().int().min(1990).max(2100).optional(),
  })
  .describe('Specification; ranks devices (memory weighs most, then storage, then recency)');

/** Ranked lists are short: at most 50, larger values truncated like list pages. */
const RankedLimit = z.coerce
  .number()
  .int()
  .min(1)
  .transform((n) => Math.min(n, MAX_PAGE_SIZE))
  .default(10)
  .describe(`How many to return, at most ${MAX_PAGE_SIZE}`);

const Device = z.object({
  id: z.string(),
  companyId: z.string(),
  serialNumber: z.string(),
  productType: ProductType,
  category: z.string(),
  manufacturer: z.string(),
  model: z.string(),
  specs: Specs,
  specScore: z.number().int(),
  condition: Condition,
  status: Status,
  inStock: z.boolean().describe('true when status is Available'),
  location: z.object({
    country: z.string().nullable(),
    companyAddressId: z.string().nullable(),
    alias: z.string().nullable(),
    city: z.string().nullable(),
  }),
  assignment: z
    .object({ employeeId: z.string(), displayName: z.string(), assignedAt: Timestamp.nullable() })
    .nullable()
    .describe('The employee holding the device; null for stock'),
  pinCodeSet: z.boolean().describe('Whether an unlock PIN is stored; the PIN itself is never returned'),
  pinCodeSetAt: Timestamp.nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

/** What tells devices apart in a table: the device, where it stands, who holds it; ids and timestamps last. */
const DEVICE_COLUMNS = columnsOf(Device, ['serialNumber', 'productType', 'model', 'status', 'assignment.displayName', 'location.country', 'manufacturer', 'condition', 'id']);

/** Fields every device registration gives; `condition` defaults differ (new stock vs a device in use). */
const NewDeviceFields = {
  serialNumber: SerialNumber,
  productType: ProductType,
  manufacturer: Text(100, 'Manufacturer, e.g. Lenovo'),
  model: Text(200, 'Model, e.g. ThinkPad X1 Carbon'),
  specs: Specs.default({}),
};

export const inventoryOperations: AnyOperation[] = [
  defineOperation({
    name: 'search_inventory',
    cli: 'inventory search',
    title: 'Search inventory',
    description: 'Searches the devices you can see, filtered by the given fields (query: serial number, manufacturer, model).',
    details: 'Admins see their companies’ devices; managers the devices of the employees they see plus unassigned stock in their regions; employees their own devices.',
    capability: 'mcp:inventory:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/inventory',
    input: z.strictObject({
      ...PageFields,
      companyId: CompanyIdField,
      query: SearchQuery.trim().optional().describe('Free text over serial number, manufacturer and model'),
      inStock: QueryBoolean.optional().describe('true: only Available devices; false: only devices not Available'),
      category: Category.optional(),
      productType: ProductType.optional(),
      country: CountryCode.optional().describe('Country where the device is'),
      status: Status.optional(),
    }),
    output: listEnvelope('devices', Device),
    columns: { devices: DEVICE_COLUMNS },
    handler: async ({ core, principal }, input) => envelopeOf('devices', await (await inventory()).searchInventory(core.db, principal, input)),
  }),
  defineOperation({
    name: 'get_assigned_devices',
    cli: 'employees devices',
    title: "List an employee's devices",
    description: 'Lists the devices assigned to an employee.',
    capability: 'mcp:inventory:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/employees/:id/devices',
    input: z.strictObject({ ...PageFields, id: Id.describe('Employee id') }),
    output: listEnvelope('devices', Device),
    columns: { devices: DEVICE_COLUMNS },
    handler: async ({ core, principal }, input) =>
      envelopeOf('devices', await (await inventory()).getAssignedDevices(core.db, principal, input.id, input)),
  }),
  defineOperation({
    name: 'get_product',
    cli: 'products get',
    title: 'Get a device',
    description: 'Reads one device (assignment, condition, location) by productId or serial number. Fails with ambiguous_serial if several of your companies have the serial number: pass companyId.',
    details: 'Employees read only their own devices.',
    capability: 'mcp:inventory:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/products/:id',
    input: z.strictObject({ id: Id.describe('productId or serial number'), companyId: CompanyIdField }),
    output: Device,
    handler: async ({ core, principal }, input) => (await inventory()).getProduct(core.db, principal, input.id, input.companyId),
  }),
  defineOperation({
    name: 'get_device_options',
    cli: 'devices options',
    title: 'Rank device options',
    description: 'Ranks the device models of one productType in stock that you can see, best specs first, each with stock, countries and up to 5 productIds to order with create_order.',
    details: 'Only devices with status Available. Ranking: highest specScore first (memory, then storage, then recency), then most units in stock, then manufacturer and model name. Returns `{ options }`.',
    capability: 'mcp:inventory:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/devices/options',
    input: z.strictObject({
      productType: ProductType,
      country: CountryCode.optional().describe('Only stock located in this country'),
      companyId: CompanyIdField,
      limit: RankedLimit,
    }),
    output: z.object({
      options: z.array(
        z.object({
          rank: z.number().int(),
          manufacturer: z.string(),
          model: z.string(),
          productType: ProductType,
          specs: Specs.describe('Specs of the best-specified unit of this model'),
          specScore: z.number().int(),
          inStock: z.number().int(),
          countries: z.array(z.string()),
          sampleProductIds: z.array(z.string()),
        }),
      ),
    }),
    columns: { options: ['rank', 'manufacturer', 'model', 'inStock', 'countries', 'specScore', 'specs', 'sampleProductIds'] },
    handler: async ({ core, principal }, input) => ({ options: await (await inventory()).deviceOptions(core.db, principal, input) }),
  }),
  defineOperation({
    name: 'suggest_alternative_device',
    cli: 'devices suggestions',
    title: 'Suggest catalog alternatives',
    description: 'When the inventory has no suitable device: catalog items purchasable in a country, shortest lead time first, to order with create_purchase_order.',
    details: 'Only items with stock > 0, optionally of one productType. Ranking: shortest lead time first, then highest specScore, then name. A country without catalog availability gives an empty list.',
    capability: 'mcp:inventory:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/devices/suggestions',
    input: z.strictObject({
      country: CountryCode.describe('Country to deliver to'),
      productType: ProductType.optional(),
      limit: RankedLimit,
    }),
    output: z.object({
      country: z.string(),
      suggestions: z.array(
        z.object({
          itemId: z.string(),
          name: z.string(),
          manufacturer: z.string(),
          productType: ProductType,
          category: z.string(),
          specs: Specs,
          specScore: z.number().int(),
          price: z.number(),
          currency: z.string(),
          stock: z.number().int(),
          leadTimeDays: z.number().int(),
        }),
      ),
    }),
    columns: { suggestions: ['itemId', 'name', 'leadTimeDays', 'price', 'currency', 'stock', 'specScore', 'manufacturer'] },
    handler: async ({ core }, input) => ({ country: input.country, suggestions: await (await inventory()).suggestAlternatives(core.db, input) }),
  }),
  defineOperation({
    name: 'add_product_pin_code',
    cli: 'products pin-code',
    title: 'Store a device PIN',
    description: `Stores or replaces a device's unlock PIN; name the device by productId or serialNumber. Only ${PIN_TYPES.join(', ')} take one, else it fails with pin_not_supported_for_type. The PIN is never returned.`,
    details: 'The PIN is encrypted at rest; the device record shows pinCodeSet and pinCodeSetAt.',
    capability: 'mcp:inventory:write',
    readOnly: false,
    idempotent: true,
    // Overwrites what was there: destructive in MCP's sense (not only additive).
    destructive: true,
    method: 'POST',
    path: '/v4/products/pin-code',
    input: z
      .strictObject({
        productId: Id.optional().describe('Device id'),
        serialNumber: SerialNumber.optional(),
        pinCode: z.string().regex(/^\d{4,12}$/, 'must be 4 to 12 digits').describe('Unlock PIN, 4 to 12 digits'),
        companyId: CompanyIdField,
      })
      .refine((v) => (v.productId === undefined) !== (v.serialNumber === undefined), {
        message: 'give exactly one of productId or serialNumber',
        path: ['productId'],
      }),
    output: Device,
    handler: async ({ core, principal }, { pinCode, ...ref }) => (await inventory()).setPinCode(core.db, core.secretKey, principal, ref, pinCode),
  }),
  defineOperation({
    name: 'register_products',
    cli: 'products register',
    title: 'Register stock devices',
    description:
      'Registers 1 to 500 devices as company stock (status Available), all or nothing. Serial numbers must be new to the company: repeats get 409 serial_number_taken naming each products.<index>.serialNumber. A companyAddressId must be one of the company’s addresses and sets the location country. Returns `{ products }`.',
    capability: 'mcp:inventory:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/products',
    origin: 'extension',
    successStatus: 201,
    input: z.strictObject({
      companyId: CompanyIdField,
      products: z
        .array(
          z.strictObject({
            ...NewDeviceFields,
            condition: Condition.default('New'),
            country: CountryCode.optional().describe("Where the device is; defaults to its address's country"),
            companyAddressId: Id.optional().describe('Saved company address (office or warehouse) holding the device'),
          }),
        )
        .min(1)
        .max(500),
    }),
    output: z.object({ products: z.array(Device) }),
    columns: { products: DEVICE_COLUMNS },
    handler: async ({ core, principal }, input) => ({ products: await (await inventory()).registerProducts(core.db, principal, input) }),
  }),
  defineOperation({
    name: 'register_device_in_use',
    cli: 'employees register-device',
    title: 'Register a device in use',
    description:
      'Records a device an employee already uses: it is created with status Assigned to that employee, located in their country. The serial number must be new to the company (409 serial_number_taken). The employee must be visible to the caller, else 404.',
    capability: 'mcp:inventory:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/employees/:id/devices',
    origin: 'extension',
    successStatus: 201,
    input: z.strictObject({ id: Id.describe('Employee id'), ...NewDeviceFields, condition: Condition.default('Good') }),
    output: Device,
    handler: async ({ core, principal }, { id, ...device }) => (await inventory()).registerDeviceInUse(core.db, principal, id, device),
  }),
];
