import { describe, expect, it } from 'vitest';
import type { Capability } from '../../src/access/capabilities.js';
import { OPERATIONS } from '../../src/app/operation-table.js';

interface ExpectedRow {
  name: string;
  capability: Capability | null;
  readOnly: boolean;
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
}

const read = (name: string, capability: Capability | null, method: ExpectedRow['method'], path: string): ExpectedRow => ({
  name,
  capability,
  readOnly: true,
  method,
  path,
});
const write = (name: string, capability: Capability, method: ExpectedRow['method'], path: string): ExpectedRow => ({
  name,
  capability,
  readOnly: false,
  method,
  path,
});

/** The interface spec's operations: its REST v4 table joined with its MCP tool tables (18 read-only, 9 write). */
const SPEC_OPERATIONS: readonly ExpectedRow[] = [
  read('whoami', null, 'GET', '/v4/me'),
  read('list_orders', 'mcp:orders:read', 'GET', '/v4/orders'),
  read('get_order', 'mcp:orders:read', 'GET', '/v4/orders/:id'),
  write('create_order', 'mcp:orders:write', 'POST', '/v4/orders'),
  read('get_order_history', 'mcp:orders:read', 'GET', '/v4/orders/:id/history'),
  read('get_tracking', 'mcp:orders:read', 'GET', '/v4/orders/:id/tracking'),
  read('get_order_sla', 'mcp:orders:read', 'GET', '/v4/orders/:id/sla'),
  read('validate_order_constraints', 'mcp:orders:read', 'POST', '/v4/orders/validate'),
  write('add_power_accessory', 'mcp:orders:write', 'POST', '/v4/orders/:id/accessories'),
  write('create_purchase_order', 'mcp:orders:write', 'POST', '/v4/orders/purchase'),
  read('list_employees', 'mcp:employees:read', 'GET', '/v4/employees'),
  read('get_employee', 'mcp:employees:read', 'GET', '/v4/employees/:id'),
  write('create_employee', 'mcp:employees:write', 'POST', '/v4/employees'),
  write('update_employee', 'mcp:employees:write', 'PATCH', '/v4/employees/:id'),
  read('get_assigned_devices', 'mcp:inventory:read', 'GET', '/v4/employees/:id/devices'),
  read('list_available_countries', 'mcp:employees:read', 'GET', '/v4/employees/countries'),
  read('list_teams', 'mcp:teams:read', 'GET', '/v4/teams'),
  read('get_team', 'mcp:teams:read', 'GET', '/v4/teams/:id'),
  write('create_team', 'mcp:teams:write', 'POST', '/v4/teams'),
  write('update_team', 'mcp:teams:write', 'PATCH', '/v4/teams/:id'),
  read('search_inventory', 'mcp:inventory:read', 'GET', '/v4/inventory'),
  read('get_device_options', 'mcp:inventory:read', 'GET', '/v4/devices/options'),
  read('suggest_alternative_device', 'mcp:inventory:read', 'GET', '/v4/devices/suggestions'),
  read('get_product', 'mcp:inventory:read', 'GET', '/v4/products/:id'),
  write('add_product_pin_code', 'mcp:inventory:write', 'POST', '/v4/products/pin-code'),
  read('list_company_addresses', 'mcp:company:read', 'GET', '/v4/company/addresses'),
  write('create_company_address', 'mcp:company:write', 'POST', '/v4/company/addresses'),
];

const specOrigin = OPERATIONS.filter((op) => op.origin === 'spec');
const rowOf = (op: (typeof OPERATIONS)[number]): ExpectedRow => ({
  name: op.name,
  capability: op.capability,
  readOnly: op.readOnly,
  method: op.method,
  path: op.path,
});

describe('operation table', () => {
  it('pins the spec: 27 operations, 18 read-only (whoami included) and 9 writes', () => {
    expect(SPEC_OPERATIONS).toHaveLength(27);
    expect(SPEC_OPERATIONS.filter((r) => r.readOnly)).toHaveLength(18);
    expect(new Set(SPEC_OPERATIONS.map((r) => r.name)).size).toBe(27);
  });

  it.each(specOrigin.map((op) => [op.name, op] as const))('%s matches its spec row exactly', (name, op) => {
    expect(rowOf(op)).toEqual(SPEC_OPERATIONS.find((r) => r.name === name));
  });

  it('holds exactly the spec operations', () => {
    expect(specOrigin.map((op) => op.name).sort()).toEqual(SPEC_OPERATIONS.map((r) => r.name).sort());
  });

  it('has unique names and unique routes', () => {
    expect(new Set(OPERATIONS.map((op) => op.name)).size).toBe(OPERATIONS.length);
    expect(new Set(OPERATIONS.map((op) => `${op.method} ${op.path}`)).size).toBe(OPERATIONS.length);
  });

  // An extension may share a spec path under another method (POST beside GET /v4/employees/:id/devices).
  it('keeps extension operations off the spec routes', () => {
    const specRoutes = new Set(SPEC_OPERATIONS.map((r) => `${r.method} ${r.path}`));
    for (const op of OPERATIONS.filter((o) => o.origin === 'extension')) {
      expect(specRoutes.has(`${op.method} ${op.path}`), op.name).toBe(false);
      expect(SPEC_OPERATIONS.some((r) => r.name === op.name), op.name).toBe(false);
    }
  });

  it.each(OPERATIONS.map((op) => [op.name, op] as const))('%s has a title and a useful description', (_name, op) => {
    expect(op.title.trim()).not.toBe('');
    expect(op.description.trim().length).toBeGreaterThanOrEqual(40);
  });

  it('uses GET for every read-only operation except validate_order_constraints', () => {
    const offenders = OPERATIONS.filter((op) => op.readOnly && op.method !== 'GET' && op.name !== 'validate_order_constraints');
    expect(offenders.map((op) => op.name)).toEqual([]);
  });

  it('answers 201 to every create_ operation and 200 to every read', () => {
    for (const op of OPERATIONS.filter((o) => o.name.startsWith('create_'))) expect(op.successStatus, op.name).toBe(201);
    for (const op of OPERATIONS.filter((o) => o.readOnly)) expect(op.successStatus, op.name).toBe(200);
  });
});
