import type { Target } from './expectations.js';
import { officeAddress } from '../helpers/bodies.js';

/*
 * One valid input per operation and per v2 route. `owner` targets a record the demo admin
 * reaches (in Acme); `outside` targets Sofía (team Sales, Spain), her device and order, team
 * Sales or company Acme: beyond the manager's team and region, another employee's for Eve, and
 * another company's for the third company's admin. Mutating inputs are built fresh for each cell.
 */

export interface WorldIds {
  acme: string;
  dana: string;
  sofia: string;
  engineering: string;
  sales: string;
  /** A team only the update_team cells rename. */
  renameTeam: string;
  danaLaptop: string;
  sofiaDevice: string;
  danaOrder: string;
  sofiaOrder: string;
  /** Available Acme stock in Germany that no order holds: validate_order_constraints deploys it. */
  stockDe: string;
  stockUs: string;
  /** Catalog item sold in DE and ES. */
  catalogItem: string;
  /** Acme's legacy v2 key. */
  legacyKeyId: string;
}

export interface World {
  ids: WorldIds;
  unique(prefix: string): string;
  /** Available stock device in Acme, Germany. */
  freshStockDevice(): Promise<string>;
  /** A device assigned to the given employee. */
  freshAssignedDevice(employeeId: string): Promise<string>;
  /** An open Maintenance order for the employee, with one laptop on it. */
  freshOrder(employeeId: string): Promise<{ orderId: string; deviceId: string }>;
  /** A new legacy v2 key of Acme holding api.employees.getAll (its successor may read employees). */
  freshLegacyKey(): Promise<string>;
  /** As freshLegacyKey, disabled. */
  freshDisabledLegacyKey(): Promise<string>;
}

type Input = Record<string, unknown>;
type Build = (w: World) => Input | Promise<Input>;

export interface Fixture {
  target: Target;
  owner: Build;
  /** Defaults to the owner's input (operations without a target). */
  outside?: Build;
}

const employee = (addressing: Target['addressing']): Target => ({ addressing, resource: 'employee' });
const team = (addressing: Target['addressing']): Target => ({ addressing, resource: 'team' });
const company = (addressing: Target['addressing']): Target => ({ addressing, resource: 'company' });
const NONE = company('none');

const newDevice = (w: World) => ({ serialNumber: w.unique('SN-MX'), productType: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad T14' });
const address = (w: World) => officeAddress(w.unique('Matrix office'));

export const FIXTURES: Record<string, Fixture> = {
  whoami: { target: NONE, owner: () => ({}) },
  list_orders: { target: employee('list'), owner: () => ({}) },
  get_order: { target: employee('id'), owner: (w) => ({ id: w.ids.danaOrder }), outside: (w) => ({ id: w.ids.sofiaOrder }) },
  get_order_history: { target: employee('id'), owner: (w) => ({ id: w.ids.danaOrder }), outside: (w) => ({ id: w.ids.sofiaOrder }) },
  get_tracking: { target: employee('id'), owner: (w) => ({ id: w.ids.danaOrder }), outside: (w) => ({ id: w.ids.sofiaOrder }) },
  get_order_sla: { target: employee('id'), owner: (w) => ({ id: w.ids.danaOrder }), outside: (w) => ({ id: w.ids.sofiaOrder }) },
  validate_order_constraints: {
    target: employee('employee_ref'),
    owner: (w) => ({ orderType: 'Deployment', employeeId: w.ids.dana, productIds: [w.ids.stockDe] }),
    outside: (w) => ({ orderType: 'Deployment', employeeId: w.ids.sofia, productIds: [w.ids.stockUs] }),
  },
  create_order: {
    target: employee('employee_ref'),
    owner: async (w) => ({ orderType: 'Deployment', employeeId: w.ids.dana, productIds: [await w.freshStockDevice()] }),
    outside: async (w) => ({ orderType: 'Deployment', employeeId: w.ids.sofia, productIds: [await w.freshStockDevice()] }),
  },
  create_purchase_order: {
    target: employee('employee_ref'),
    owner: (w) => ({ orderType: 'Purchase for Inventory', companyId: w.ids.acme, items: [{ itemId: w.ids.catalogItem, quantity: 1, country: 'DE' }] }),
    outside: (w) => ({ orderType: 'Purchase for Employee', employeeId: w.ids.sofia, items: [{ itemId: w.ids.catalogItem, quantity: 1, country: 'ES' }] }),
  },
  add_power_accessory: {
    target: employee('id'),
    owner: async (w) => {
      const { orderId, deviceId } = await w.freshOrder(w.ids.dana);
      return { id: orderId, productId: deviceId };
    },
    outside: (w) => ({ id: w.ids.sofiaOrder, productId: w.ids.sofiaDevice }),
  },
  record_order_event: {
    target: employee('id'),
    owner: async (w) => ({ id: (await w.freshOrder(w.ids.dana)).orderId, type: 'shipment', carrier: 'DHL', trackingNumber: w.unique('TN'), direction: 'outbound' }),
    outside: (w) => ({ id: w.ids.sofiaOrder, type: 'shipment', carrier: 'DHL', trackingNumber: w.unique('TN'), direction: 'outbound' }),
  },
  list_employees: { target: employee('list'), owner: () => ({}) },
  get_employee: { target: employee('id'), owner: (w) => ({ id: w.ids.dana }), outside: (w) => ({ id: w.ids.sofia }) },
  list_available_countries: { target: employee('list'), owner: () => ({}) },
  create_employee: {
    target: employee('placement'),
    owner: (w) => ({ companyId: w.ids.acme, displayName: 'Matrix Hire', email: `${w.unique('hire')}@acme.example`, teamName: 'Engineering', country: 'DE' }),
    outside: (w) => ({ companyId: w.ids.acme, displayName: 'Matrix Hire', email: `${w.unique('hire')}@acme.example`, teamName: 'Sales', country: 'ES' }),
  },
  update_employee: {
    target: employee('id'),
    owner: (w) => ({ id: w.ids.dana, jobTitle: 'Frontend Engineer' }),
    outside: (w) => ({ id: w.ids.sofia, jobTitle: 'Sales Manager' }),
  },
  get_assigned_devices: { target: employee('id'), owner: (w) => ({ id: w.ids.dana }), outside: (w) => ({ id: w.ids.sofia }) },
  register_device_in_use: {
    target: employee('id'),
    owner: (w) => ({ id: w.ids.dana, ...newDevice(w) }),
    outside: (w) => ({ id: w.ids.sofia, ...newDevice(w) }),
  },
  list_teams: { target: team('list'), owner: () => ({}) },
  get_team: { target: team('id'), owner: (w) => ({ id: w.ids.engineering }), outside: (w) => ({ id: w.ids.sales }) },
  create_team: {
    target: company('company'),
    owner: (w) => ({ companyId: w.ids.acme, name: w.unique('Matrix team') }),
  },
  update_team: {
    target: team('id'),
    owner: (w) => ({ id: w.ids.renameTeam, name: w.unique('Renamed') }),
    outside: (w) => ({ id: w.ids.sales, name: w.unique('Hijacked') }),
  },
  search_inventory: { target: employee('list'), owner: () => ({}) },
  get_product: { target: employee('id'), owner: (w) => ({ id: w.ids.danaLaptop }), outside: (w) => ({ id: w.ids.sofiaDevice }) },
  get_device_options: { target: NONE, owner: () => ({ productType: 'Laptops' }) },
  suggest_alternative_device: { target: NONE, owner: () => ({ country: 'DE' }) },
  add_product_pin_code: {
    target: employee('id'),
    owner: (w) => ({ productId: w.ids.danaLaptop, pinCode: '4321' }),
    outside: (w) => ({ productId: w.ids.sofiaDevice, pinCode: '4321' }),
  },
  register_products: {
    target: company('company'),
    owner: (w) => ({ companyId: w.ids.acme, products: [{ ...newDevice(w), country: 'DE' }] }),
  },
  list_company_addresses: { target: company('list'), owner: () => ({}) },
  create_company_address: { target: company('company'), owner: (w) => ({ companyId: w.ids.acme, ...address(w) }) },
  list_legacy_keys: { target: company('list'), owner: () => ({}) },
  get_legacy_key: { target: company('id'), owner: (w) => ({ id: w.ids.legacyKeyId }) },
  get_legacy_key_plan: { target: company('id'), owner: (w) => ({ id: w.ids.legacyKeyId }) },
  // The capable key holds only mcp:employees:read, so the successor asks for exactly that.
  // The successor gets what minting needs anyway (mcp:company:write), so the capable key can hand it on.
  mint_legacy_key_successor: { target: company('id'), owner: async (w) => ({ id: await w.freshLegacyKey(), capabilities: ['mcp:company:write'] }) },
  // A fresh key is never quiet, so the disable is forced: the matrix checks who may, not the cutover guard.
  disable_legacy_key: { target: company('id'), owner: async (w) => ({ id: await w.freshLegacyKey(), force: true, reason: 'access matrix' }) },
  enable_legacy_key: { target: company('id'), owner: async (w) => ({ id: await w.freshDisabledLegacyKey() }) },
  // Filtered to the caller's companies: another company's admin reads an empty report.
  get_shadow_report: { target: company('list'), owner: () => ({}) },
};

export interface V2Fixture {
  target?: Target;
  params?: (w: World) => Record<string, string> | Promise<Record<string, string>>;
  body?: Build;
}

/** v2 inputs by route ("METHOD /path"); a v2 key is bound to its company, so no companyId is sent. */
export const V2_FIXTURES: Record<string, V2Fixture> = {
  'GET /employees': { target: employee('list') },
  'GET /employees/:id': { target: employee('id'), params: (w) => ({ id: w.ids.dana }) },
  'POST /employees': {
    target: employee('placement'),
    body: (w) => ({ displayName: 'Matrix V2 Hire', email: `${w.unique('v2hire')}@acme.example`, deliveryAddress: { country: 'DE', city: 'Berlin' } }),
  },
  'PATCH /employees/:id': { target: employee('id'), params: (w) => ({ id: w.ids.dana }), body: () => ({ jobTitle: 'Frontend Engineer' }) },
  'GET /employees/:id/deliveryAddress': { target: employee('id'), params: (w) => ({ id: w.ids.dana }) },
  'POST /employees/:id/deliveryAddress': { target: employee('id'), params: (w) => ({ id: w.ids.dana }), body: () => ({ country: 'DE', city: 'Berlin' }) },
  'PATCH /employees/:id/deliveryAddress': { target: employee('id'), params: (w) => ({ id: w.ids.dana }), body: () => ({ city: 'Berlin' }) },
  'POST /employees/:id/offboarding': {
    target: employee('employee_ref'),
    params: (w) => ({ id: w.ids.dana }),
    body: async (w) => ({ productIds: [await w.freshAssignedDevice(w.ids.dana)] }),
  },
  'GET /employees/:id/products': { target: employee('id'), params: (w) => ({ id: w.ids.dana }) },
  'POST /employees/products/productInUse': { target: employee('id'), body: (w) => ({ employeeId: w.ids.dana, ...newDevice(w) }) },
  'GET /teams': { target: team('list') },
  'GET /teams/:teamId': { target: team('id'), params: (w) => ({ teamId: w.ids.engineering }) },
  'POST /teams': { target: company('company'), body: (w) => ({ name: w.unique('Matrix v2 team') }) },
  'PATCH /teams/:teamId': { target: team('id'), params: (w) => ({ teamId: w.ids.renameTeam }), body: (w) => ({ name: w.unique('Renamed v2') }) },
  'GET /orders': { target: employee('list') },
  'POST /orders/assignToEmployee': {
    target: employee('employee_ref'),
    body: async (w) => ({ employeeId: w.ids.dana, productIds: [await w.freshStockDevice()] }),
  },
  'POST /orders/offboarding': {
    target: employee('employee_ref'),
    body: async (w) => ({ employeeId: w.ids.dana, productIds: [await w.freshAssignedDevice(w.ids.dana)] }),
  },
  'POST /orders/collection': {
    target: employee('employee_ref'),
    body: async (w) => ({ employeeId: w.ids.dana, productIds: [await w.freshAssignedDevice(w.ids.dana)] }),
  },
  'POST /orders/swap': {
    target: employee('employee_ref'),
    body: async (w) => ({ employeeId: w.ids.dana, productIds: [await w.freshAssignedDevice(w.ids.dana), await w.freshStockDevice()] }),
  },
  'POST /orders/purchaseOrder': { target: company('company'), body: (w) => ({ items: [{ itemId: w.ids.catalogItem, quantity: 1, country: 'DE' }] }) },
  'GET /products': { target: employee('list') },
  'GET /products/:productId': { target: employee('id'), params: (w) => ({ productId: w.ids.danaLaptop }) },
  'POST /products/uploadProducts': { target: company('company'), body: (w) => ({ products: [{ ...newDevice(w), country: 'DE' }] }) },
  'POST /products/addPinCode': { target: employee('id'), body: (w) => ({ productId: w.ids.danaLaptop, pinCode: '4321' }) },
  'GET /companyAddresses': { target: company('list') },
  'POST /companyAddresses': { target: company('company'), body: (w) => address(w) },
};
