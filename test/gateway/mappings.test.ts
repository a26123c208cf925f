import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serialize } from 'node:v8';
import { afterAll, describe, expect, it } from 'vitest';
import {
  capabilitiesForScopes,
  loadMappings,
  MappingError,
  ROUTES_FILE,
  SCOPES_FILE,
  scopeEntryFor,
  SUNSET_FILE,
} from '../../src/legacy/mappings.js';
import { domainOperationByName } from '../../src/operations/domain-table.js';
import { loadShippedWith } from '../helpers/maps.js';

const SHIPPED = join(import.meta.dirname, '../../mappings');

/** The spec's "v2 to v4 mapping" table, row by row. */
const SPEC_TABLE: [scope: string, capability: string, endpoints: string[]][] = [
  ['api.employees.getAll', 'mcp:employees:read', ['GET /employees']],
  ['api.employee.get', 'mcp:employees:read', ['GET /employees/:id']],
  ['api.employees.create', 'mcp:employees:write', ['POST /employees']],
  ['api.employee.update', 'mcp:employees:write', ['PATCH /employees/:id']],
  ['api.employee.products.get', 'mcp:inventory:read', ['GET /employees/:id/products']],
  ['api.employee.products.create', 'mcp:inventory:write', ['POST /employees/products/productInUse']],
  ['api.employee.deliveryAddress.get', 'mcp:employees:read', ['GET /employees/:id/deliveryAddress']],
  ['api.employee.deliveryAddress.create', 'mcp:employees:write', ['POST /employees/:id/deliveryAddress']],
  ['api.employee.deliveryAddress.update', 'mcp:employees:write', ['PATCH /employees/:id/deliveryAddress']],
  ['api.teams.getAll', 'mcp:teams:read', ['GET /teams']],
  ['api.team.get', 'mcp:teams:read', ['GET /teams/:teamId']],
  ['api.teams.create', 'mcp:teams:write', ['POST /teams']],
  ['api.team.update', 'mcp:teams:write', ['PATCH /teams/:teamId']],
  ['api.orders.getAll', 'mcp:orders:read', ['GET /orders']],
  [
    'api.orders.create',
    'mcp:orders:write',
    ['POST /orders/assignToEmployee', 'POST /orders/offboarding', 'POST /orders/collection', 'POST /orders/swap', 'POST /orders/purchaseOrder'],
  ],
  ['api.products.getAll', 'mcp:inventory:read', ['GET /products']],
  ['api.product.get', 'mcp:inventory:read', ['GET /products/:productId']],
  ['api.products.create', 'mcp:inventory:write', ['POST /products/uploadProducts']],
  ['api.product.update', 'mcp:inventory:write', ['POST /products/addPinCode']],
  ['api.company.addresses.get', 'mcp:company:read', ['GET /companyAddresses']],
  ['api.company.addresses.create', 'mcp:company:write', ['POST /companyAddresses']],
];

/** The spec's "Without a v4 successor" table. */
const NO_SUCCESSOR = [
  'api.catalogs.getAll',
  'api.catalogs.items.getAll',
  'api.company.get',
  'api.company.update',
  'api.orders.update',
  'api.organization.*',
];

const mappings = loadMappings(SHIPPED);

const endpointsOf = (scope: string) =>
  mappings.scopes.find((s) => s.name === scope)!.endpoints.map((e) => `${e.method} ${e.path}`);
const routeAt = (key: string) => mappings.routes.find((r) => `${r.method} ${r.path}` === key);

describe('the shipped v2 → v4 maps', () => {
  it('load, with the sunset of the spec and the /v2 prefix', () => {
    expect(mappings.sunset.sunset.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(mappings.sunset.deprecation < mappings.sunset.sunset).toBe(true);
    expect(mappings.sunset.prefix).toBe('/v2');
    expect(mappings.sunset.listCeiling).toBeGreaterThan(0);
    expect(mappings.sunset.brownouts).toHaveLength(2);
    expect(mappings.sunset.links.successor).toContain('{v4Path}');
  });

  it('keep their strings one-byte, though a map\'s text holds a character beyond Latin-1 (the Link header, field names)', () => {
    const edited = loadShippedWith(
      [SCOPES_FILE, '# Every v2 scope', '# → Every v2 scope'],
      [ROUTES_FILE, '# Every v2 endpoint', '# → Every v2 endpoint'],
      [SUNSET_FILE, '# Deprecation signals', '# → Deprecation signals'],
    );
    const strings: string[] = [];
    const collect = (value: unknown): void => {
      if (typeof value === 'string') strings.push(value);
      else if (Array.isArray(value)) value.forEach(collect);
      else if (value !== null && typeof value === 'object') Object.values(value).forEach(collect);
    };
    collect(edited);
    const latin1 = strings.filter((s) => s.length > 1 && [...s].every((c) => c.codePointAt(0)! <= 0xff));
    expect(latin1.length).toBeGreaterThan(100);
    // V8's serializer tags a string by how V8 holds it: '"' one-byte, 'c' two-byte.
    const twoByte = latin1.filter((s) => serialize(s)[2] !== '"'.charCodeAt(0));
    expect(twoByte).toEqual([]);
  });

  it.each(SPEC_TABLE)('maps %s to %s with its v2 endpoints', (scope, capability, endpoints) => {
    const entry = scopeEntryFor(mappings.scopes, scope);
    expect(entry?.name).toBe(scope);
    expect(entry?.capability).toBe(capability);
    expect(['mapped', 'mapped-broader']).toContain(entry?.status);
    expect(endpointsOf(scope)).toEqual(endpoints);
    for (const endpoint of endpoints) expect(routeAt(endpoint)).toMatchObject({ kind: 'v4', scope });
  });

  it('notes where v4 is broader: the delivery-address scopes and order creation', () => {
    const broader = mappings.scopes.filter((s) => s.status === 'mapped-broader').map((s) => s.name);
    expect(broader.sort()).toEqual(
      ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update', 'api.orders.create'].sort(),
    );
    for (const name of broader) expect(scopeEntryFor(mappings.scopes, name)?.note).toBeTruthy();
  });

  it.each(NO_SUCCESSOR)('keeps %s on v2 with a reason, forwarded to the legacy upstream', (scope) => {
    const entry = mappings.scopes.find((s) => s.name === scope);
    expect(entry).toMatchObject({ status: 'no-successor', capability: undefined });
    expect(entry?.reason).toBeTruthy();
    for (const endpoint of endpointsOf(scope)) expect(routeAt(endpoint)?.kind).toBe('passthrough');
  });

  it('translates api.employee.offBoarding to an Offboarding order', () => {
    const entry = scopeEntryFor(mappings.scopes, 'api.employee.offBoarding');
    expect(entry).toMatchObject({ status: 'covered-by-order-type', capability: 'mcp:orders:write' });
    expect(entry?.reason).toBeTruthy();
    const route = routeAt('POST /employees/:id/offboarding');
    expect(route).toMatchObject({ kind: 'v4', operation: 'create_order' });
    expect(route?.kind === 'v4' && route.request).toContainEqual({ op: 'set', field: 'orderType', value: 'Offboarding' });
  });

  it('has no scope beyond the two spec tables (wildcards match their sub-scopes)', () => {
    const names = mappings.scopes.map((s) => s.name).sort();
    expect(names).toEqual([...SPEC_TABLE.map(([s]) => s), ...NO_SUCCESSOR, 'api.employee.offBoarding'].sort());
    expect(scopeEntryFor(mappings.scopes, 'api.organization.companies.getAll')?.name).toBe('api.organization.*');
  });

  it('names only v4 operations of the operation table', () => {
    const named = mappings.routes.flatMap((r) =>
      r.kind === 'v4'
        ? [
            r.operation,
            ...[...r.request, ...r.response].flatMap((t) => (t.op === 'lookup' || t.op === 'follow_up' ? [t.operation] : [])),
          ]
        : [],
    );
    expect(named.length).toBeGreaterThan(20);
    for (const name of named) expect(domainOperationByName(name), name).toBeDefined();
  });

  it('selects the v4 order type of each v2 order endpoint', () => {
    const typeOf = (key: string) => {
      const route = routeAt(key);
      return route?.kind === 'v4' ? route.request.flatMap((t) => (t.op === 'set' ? [t.value] : [])) : [];
    };
    expect(typeOf('POST /orders/assignToEmployee')).toEqual(['Deployment']);
    expect(typeOf('POST /orders/offboarding')).toEqual(['Offboarding']);
    expect(typeOf('POST /orders/collection')).toEqual(['Collection']);
    expect(typeOf('POST /orders/swap')).toEqual(['Swap from Inventory']);
    expect(typeOf('POST /orders/purchaseOrder')).toEqual(['Purchase for Employee', 'Purchase for Inventory']);
    expect(routeAt('POST /orders/purchaseOrder')).toMatchObject({ operation: 'create_purchase_order' });
  });

  it('splices shared transform lists and declares invitation=true as an explicit 400', () => {
    const route = routeAt('GET /employees/:id');
    expect(route?.kind).toBe('v4');
    if (route?.kind !== 'v4') return;
    expect(route.request[0]).toMatchObject({ op: 'refuse', field: 'invitation', equals: 'true', status: 400 });
    expect(route.response.map((t) => t.op)).toEqual(['rename', 'lookup', 'move_into']);
    const create = routeAt('POST /employees');
    expect(create?.kind === 'v4' && create.request.map((t) => t.op)).toEqual(['require', 'move_out_of', 'rename', 'lookup', 'follow_up']);
  });
});

describe('capabilitiesForScopes', () => {
  it('collapses the three delivery-address scopes into the two employee capabilities', () => {
    expect(
      capabilitiesForScopes(mappings, [
        'api.employee.deliveryAddress.get',
        'api.employee.deliveryAddress.create',
        'api.employee.deliveryAddress.update',
      ]),
    ).toEqual(['mcp:employees:read', 'mcp:employees:write']);
  });

  it('gives nothing for scopes without a v4 successor, wildcards included', () => {
    expect(capabilitiesForScopes(mappings, ['api.catalogs.getAll'])).toEqual([]);
    expect(capabilitiesForScopes(mappings, ['api.organization.companies.getAll', 'api.company.update'])).toEqual([]);
  });

  it('adds the teams read that the teamId ↔ teamName lookup needs', () => {
    expect(capabilitiesForScopes(mappings, ['api.employee.get'])).toEqual(['mcp:employees:read', 'mcp:teams:read']);
  });

  it('counts a capability once across scopes, in table order', () => {
    expect(
      capabilitiesForScopes(mappings, ['api.orders.create', 'api.employee.offBoarding', 'api.products.getAll', 'api.orders.getAll']),
    ).toEqual(['mcp:orders:read', 'mcp:inventory:read', 'mcp:orders:write']);
  });

  it('refuses an unknown scope by name', () => {
    expect(() => capabilitiesForScopes(mappings, ['api.nothing.here'])).toThrow(/api\.nothing\.here/);
  });
});

const tmpDirs: string[] = [];
afterAll(() => {
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
});

function copyOfShipped(): string {
  const dir = mkdtempSync(join(tmpdir(), 'v2-maps-'));
  tmpDirs.push(dir);
  cpSync(SHIPPED, dir, { recursive: true });
  return dir;
}

/** A copy of the shipped maps with one textual edit, which must apply exactly once. */
function shippedWith(file: string, from: string, to: string): string {
  const dir = copyOfShipped();
  const text = readFileSync(join(dir, file), 'utf8');
  expect(text.split(from), `"${from}" occurs once in ${file}`).toHaveLength(2);
  writeFileSync(join(dir, file), text.replace(from, to));
  return dir;
}

function loadError(dir: string): string {
  try {
    loadMappings(dir);
  } catch (error) {
    expect(error).toBeInstanceOf(MappingError);
    return (error as Error).message;
  }
  throw new Error('the maps loaded');
}

describe('loadMappings refuses broken maps', () => {
  it('a route whose scope has no entry (a route has no rule)', () => {
    const dir = shippedWith(ROUTES_FILE, 'scope: api.team.update', 'scope: api.team.rename');
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.\d+ \(PATCH \/teams\/:teamId\): scope api\.team\.rename has no entry/);
  });

  it('a scope endpoint no route serves (a rule matches no route)', () => {
    const dir = shippedWith(SCOPES_FILE, 'endpoints: [GET /company]', 'endpoints: [GET /company, GET /company/settings]');
    expect(loadError(dir)).toMatch(/^scopes\.yaml: scope api\.company\.get lists GET \/company\/settings, but no route/);
  });

  it('a route outside its scope’s endpoints', () => {
    const dir = shippedWith(ROUTES_FILE, 'path: /teams/:teamId\n    scope: api.team.get', 'path: /teams/:teamId\n    scope: api.teams.getAll');
    expect(loadError(dir)).toMatch(/GET \/teams\/:teamId\): is not among the endpoints of scope api\.teams\.getAll/);
  });

  it('an unknown capability', () => {
    const dir = shippedWith(SCOPES_FILE, 'capability: mcp:company:write', 'capability: mcp:company:admin');
    expect(loadError(dir)).toMatch(/^scopes\.yaml: scopes\.api\.company\.addresses\.create\.capability: /);
  });

  it('an unknown v4 operation', () => {
    const dir = shippedWith(ROUTES_FILE, 'v4: get_product\n', 'v4: get_products\n');
    expect(loadError(dir)).toMatch(/GET \/products\/:productId\): names v4 operation "get_products", which is not in the operation table/);
  });

  it('a GET that calls a write', () => {
    const dir = shippedWith(ROUTES_FILE, 'v4: get_team\n', 'v4: update_team\n');
    expect(loadError(dir)).toMatch(/GET \/teams\/:teamId\): a GET is answered as a read, but it calls "update_team", which writes/);
  });

  it('a v4 call whose capability is not the scope’s', () => {
    const dir = shippedWith(ROUTES_FILE, 'v4: get_team\n', 'v4: get_order\n');
    expect(loadError(dir)).toMatch(/GET \/teams\/:teamId\): calls "get_order", which needs mcp:orders:read, but scope api\.team\.get maps to mcp:teams:read/);
  });

  it('a passthrough route for a scope that has a v4 successor', () => {
    const dir = shippedWith(SCOPES_FILE, 'status: no-successor\n    endpoints: [GET /company]\n    reason: no v4 company read', 'status: mapped\n    capability: mcp:company:read\n    endpoints: [GET /company]');
    expect(loadError(dir)).toMatch(/GET \/company\): scope api\.company\.get is mapped, so the route must name its v4 operation/);
  });

  it('an unwrap_list key that is not the operation’s list', () => {
    const dir = shippedWith(ROUTES_FILE, '{ op: unwrap_list, key: teams }', '{ op: unwrap_list, key: team }');
    expect(loadError(dir)).toMatch(/GET \/teams\): unwrap_list key "team" is not the list of list_teams/);
  });

  it('an unwrap_list after another response transform', () => {
    const dir = shippedWith(ROUTES_FILE, 'response: [{ op: unwrap_list, key: teams }]', 'response: [{ op: rename, from: id, to: teamId }, { op: unwrap_list, key: teams }]');
    expect(loadError(dir)).toMatch(/GET \/teams\): unwrap_list must be the first response transform/);
  });

  it('a transform with bad parameters', () => {
    const dir = shippedWith(ROUTES_FILE, 'value: Deployment }', 'value: Deployment, when_present: a, when_absent: b }');
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.\d+\.request\.0.*at most one of when_present and when_absent/);
  });

  it('an unknown transform, listing the known ones', () => {
    const dir = shippedWith(ROUTES_FILE, '{ op: pick, fields: [teamId] }', '{ op: pik, fields: [teamId] }');
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.0\.request\.0\.op: .*'rename'.*'follow_up'/);
  });

  it('shadow-check rules on a write: writes are never mirrored', () => {
    const dir = shippedWith(ROUTES_FILE, "    v4: create_team\n", "    v4: create_team\n    compare: { volatile: [createdAt] }\n");
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.\d+\.compare: only a translated GET is compared with the legacy v2 API \(writes are never mirrored\)/);
  });

  it('a shadow-check path that does not fit the answer: a bare list’s paths start with []', () => {
    const dir = shippedWith(ROUTES_FILE, "volatile: ['[].createdAt']\n", 'volatile: [createdAt]\n');
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.\d+\.compare: createdAt: this route answers a bare list, so paths start with \[\]/);
  });

  it('a duplicate method and path', () => {
    const dir = shippedWith(ROUTES_FILE, 'path: /orders/collection', 'path: /orders/swap');
    expect(loadError(dir)).toMatch(/^v2-routes\.yaml: routes\.\d+ \(POST \/orders\/swap\): duplicates routes\.\d+/);
  });

  it('a sunset earlier than the deprecation date', () => {
    const dir = shippedWith(SUNSET_FILE, "sunset: '2027-01-01T00:00:00Z'", "sunset: '2025-01-01T00:00:00Z'");
    expect(loadError(dir)).toMatch(/^sunset\.yaml: sunset 2025-01-01T00:00:00\.000Z is earlier than the deprecation date 2025-07-01/);
  });

  it('a brownout that ends before it starts', () => {
    const dir = shippedWith(SUNSET_FILE, "end: '2026-12-01T17:00:00Z'", "end: '2026-12-01T13:00:00Z'");
    expect(loadError(dir)).toMatch(/^sunset\.yaml: brownouts\.0 .*: end must be after start/);
  });

  it('a brownout past the sunset', () => {
    const dir = shippedWith(SUNSET_FILE, "end: '2026-12-15T20:00:00Z'", "end: '2027-01-02T00:00:00Z'");
    expect(loadError(dir)).toMatch(/^sunset\.yaml: brownouts\.1 .*: must lie between the deprecation date .* and the sunset/);
  });

  it('a missing file, naming it', () => {
    const dir = copyOfShipped();
    rmSync(join(dir, SUNSET_FILE));
    expect(loadError(dir)).toMatch(/^sunset\.yaml: cannot be read/);
  });
});
