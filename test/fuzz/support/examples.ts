import type { DemoData } from '../../../src/domain/demo.js';
import type { Doc } from './fuzz.js';

/**
 * One valid input per operation of the table (as the demo admin, in Acme), the seed of the
 * mutations: a mutation one field away from valid reaches the deep validators and the handler.
 * rest.test.ts fails when an operation has no example, so new operations are fuzzed too.
 */
export function validExamples(demo: DemoData, catalogItemId: string): Record<string, Doc> {
  const companyId = demo.companies.acme;
  const employeeId = demo.employees.eve;
  const [productId = 'dev_missing'] = Object.values(demo.devices);
  const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
  return {
    whoami: {},
    list_orders: { companyId, status: 'pending', orderType: 'deployment', query: 'eve', topLevel: 'true', sort: '-createdAt', limit: '5' },
    get_order: { id: 'ord_missing' },
    get_order_history: { id: 'ord_missing' },
    record_order_event: { id: 'ord_missing', type: 'delay', reason: 'customs', note: 'held at the border' },
    validate_order_constraints: { orderType: 'Deployment', employeeId, productIds: [productId] },
    create_order: {
      orderType: 'Collection',
      employeeId,
      productIds: [productId],
      dispositions: [{ productId, action: 'recycle' }],
      legalHold: { caseId: 'CASE-1', reason: 'litigation' },
      pickupWindow: { start: future(1), end: future(2) },
    },
    create_purchase_order: { orderType: 'Purchase for Inventory', companyId, items: [{ itemId: catalogItemId, quantity: 1, country: 'DE' }] },
    add_power_accessory: { id: 'ord_missing', productId },
    get_order_sla: { id: 'ord_missing' },
    get_tracking: { id: 'ord_missing' },
    list_employees: { companyId, query: 'a', teamName: 'Engineering', country: 'de', limit: '10', page: '1' },
    get_employee: { id: employeeId },
    list_available_countries: { companyId },
    create_employee: { companyId, displayName: 'Fuzz Person', email: 'fuzz@acme.example', jobTitle: 'Tester', city: 'Berlin', country: 'DE' },
    update_employee: { id: employeeId, jobTitle: 'Engineer', addressTwo: 'Floor 2', phone: '+49 30 5550 100', teamName: null },
    list_teams: { companyId, query: 'eng' },
    get_team: { id: demo.teams.engineering },
    create_team: { companyId, name: 'Fuzzers' },
    update_team: { id: demo.teams.research, name: 'Research' },
    search_inventory: { companyId, query: 'think', inStock: 'true', category: 'Computers', productType: 'Laptops', country: 'DE', status: 'Available' },
    get_assigned_devices: { id: employeeId, limit: '5' },
    get_product: { id: productId, companyId },
    get_device_options: { productType: 'Laptops', country: 'DE', companyId, limit: '3' },
    suggest_alternative_device: { country: 'DE', productType: 'Laptops', limit: '3' },
    add_product_pin_code: { productId, pinCode: '123456', companyId },
    register_products: { companyId, products: [{ serialNumber: 'FUZZ-1', productType: 'Laptops', manufacturer: 'Lenovo', model: 'X1', specs: { ramGb: 16 } }] },
    register_device_in_use: { id: employeeId, serialNumber: 'FUZZ-2', productType: 'Mice', manufacturer: 'Logitech', model: 'MX' },
    list_company_addresses: { companyId, country: 'DE', query: 'HQ' },
    create_company_address: {
      companyId,
      alias: 'Fuzz Office',
      address: 'Main St 1',
      city: 'Berlin',
      zipCode: '10115',
      country: 'DE',
      contactName: 'Fuzz Contact',
      contactEmail: 'contact@acme.example',
      phone: '+49 30 5550 100',
    },
    list_legacy_keys: {},
    get_legacy_key: { id: 'lk_missing' },
    get_legacy_key_plan: { id: 'lk_missing' },
    mint_legacy_key_successor: { id: 'lk_missing', capabilities: ['mcp:employees:read'], replace: false },
    disable_legacy_key: { id: 'lk_missing', reason: 'fuzzed' },
    enable_legacy_key: { id: 'lk_missing', reason: 'fuzzed' },
    get_shadow_report: {},
  };
}
