import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGatewayCore, type GatewayCore } from '../../src/app/gateway-core.js';
import { buildGatewayApp } from '../../src/app/gateway-app.js';
import { createLegacyKey, disableLegacyKey, legacyKeyUsage, resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import { defaultMappingsDir, loadMappings } from '../../src/legacy/mappings.js';
import { routeAnchor } from '../../src/migration/migration-guide.js';
import { registerV2Routes } from '../../src/gateway/v2-routes.js';
import { inProcessV4 } from '../../src/gateway/v4-client.js';
import { baseApp } from '../../src/app/base-app.js';
import { registerRestRoutes } from '../../src/http/rest.js';
import { OPERATIONS } from '../../src/app/operation-table.js';
import { MAX_PAGE_SIZE } from '../../src/operations/common.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type ApiResponse, type Backend, type TestApp, EVENTUALLY } from '../helpers/harness.js';
import { v4Recorder, type RecordedV4Call } from '../helpers/recording-v4.js';

/*
 * One golden test per v2 route of the maps: the exact v4 calls the gateway makes for a legacy key
 * with every scope, and the exact v2 answer against the v4 answer translated by hand (the legacy
 * names, bare arrays, deliveryAddress).
 */

// Outside the brownouts of sunset.yaml, so v2 answers.
const NOW = new Date('2026-06-01T12:00:00Z');
const DEPRECATION = `@${Date.parse('2025-07-01T00:00:00Z') / 1000}`;
const SUNSET = 'Fri, 01 Jan 2027 00:00:00 GMT';
const ADDRESS_FIELDS = ['addressOne', 'addressTwo', 'city', 'state', 'zipCode', 'country', 'phone'] as const;
const ADDRESS_SCOPES = ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update'];

type Doc = Record<string, unknown>;

const mappings = loadMappings(defaultMappingsDir());
const ROUTES = mappings.routes.map((r) => `${r.method} ${r.path}`);
type Method = 'GET' | 'POST' | 'PATCH';

interface Golden {
  url: string;
  body?: Doc;
  status: number;
  /** The v4 path of the Link successor header; null for a route without a v4 successor, which sends none. */
  successor: string | null;
  /** The exact v2 body, usually computed from a v4 read with the same bridge key. */
  expected: (res: ApiResponse) => Promise<unknown>;
  /** The exact v4 calls, in order, lookups and follow-ups included; a function where they hold an id the call created. */
  calls: RecordedV4Call[] | ((res: ApiResponse) => RecordedV4Call[]);
}

/** The gateway in the service (together), or as its own app on the gateway's services on the same schema, calling the service over HTTP (apart; PostgreSQL only). */
type Deployment = 'together' | 'apart';
const DEPLOYMENTS = backends().flatMap((backend): [Backend, Deployment][] =>
  backend === 'postgres' ? [[backend, 'together'], [backend, 'apart']] : [[backend, 'together']],
);

/** The gateway of the deployment, its v4 client wrapped by the recorder. */
async function startGateway(
  t: TestApp,
  deployment: Deployment,
  recorder: ReturnType<typeof v4Recorder>,
): Promise<{ app: FastifyInstance; core: GatewayCore; close(): Promise<void> }> {
  if (deployment === 'together') {
    // The service's routes as buildApp registers them (docs aside), on the test's core.
    const app = baseApp(t.core);
    registerRestRoutes(app, t.core, OPERATIONS);
    const v4For = inProcessV4(t.core);
    registerV2Routes(app, t.core, (requestId, asOf) => recorder.wrap(v4For(requestId, asOf)));
    await app.ready();
    return { app, core: t.core, close: () => app.close() };
  }
  if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
  const [row] = await t.core.db.query<{ schema: string }>(sql`SELECT current_schema() AS schema`);
  const core = await createGatewayCore(t.core.config, { logger: pino({ level: 'silent' }), now: () => NOW, schema: row!.schema });
  const app = await buildGatewayApp(core, `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`, recorder.wrap);
  await app.ready();
  return {
    app,
    core,
    async close() {
      await app.close();
      await core.close();
    },
  };
}

describe.each(DEPLOYMENTS)('v2 gateway golden answers [%s, %s]', (backend, deployment) => {
  let t: TestApp;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let v2Key: string;
  let bridge: ReturnType<typeof client>;
  let purchasableItem: string;
  const recorder = v4Recorder();
  /** A v4 list read as the gateway starts it: the first page as large as the later ones. */
  const firstPage = (operation: string, input: Doc = {}): RecordedV4Call => ({ operation, input: { ...input, limit: MAX_PAGE_SIZE } });

  const v2 = (key: string | undefined, method: Method, url: string, body?: Doc, app = gateway.app) =>
    client(app, key)[method === 'GET' ? 'get' : method === 'POST' ? 'post' : 'patch'](url, body);
  const v4Data = async (url: string) => {
    const res = await bridge.get(url);
    expect(res.status, url).toBe(200);
    return res.body.data as Doc;
  };
  /** Every record of a v4 list, walked with the cursor. */
  const v4All = async (url: string, key: string): Promise<Doc[]> => {
    const records: Doc[] = [];
    let cursor: string | null = null;
    do {
      const page: Doc = await v4Data(`${url}${url.includes('?') ? '&' : '?'}limit=50${cursor ? `&cursor=${cursor}` : ''}`);
      records.push(...(page[key] as Doc[]));
      cursor = page.nextCursor as string | null;
    } while (cursor);
    return records;
  };
  const teamIdOf = async (name: unknown) =>
    name === null ? null : ((await v4All('/v4/teams', 'teams')).find((team) => team.name === name)?.id ?? null);
  /** The v2 employee, written out by hand from the v4 one. */
  const v2Employee = async (e: Doc) => {
    const { personalEmail, teamName, ...rest } = e;
    const flat = Object.fromEntries(Object.entries(rest).filter(([k]) => !ADDRESS_FIELDS.includes(k as never) || k === 'country'));
    const deliveryAddress = Object.fromEntries(ADDRESS_FIELDS.map((k) => [k, e[k]]));
    return { ...flat, secondaryEmail: personalEmail, teamId: await teamIdOf(teamName), deliveryAddress };
  };
  /** A team as create and rename answer it: the read adds the head count. */
  const writtenTeam = async (id: string) => Object.fromEntries(Object.entries(await v4Data(`/v4/teams/${id}`)).filter(([k]) => k !== 'employeeCount'));
  const addressOf = (e: Doc) => Object.fromEntries(ADDRESS_FIELDS.map((k) => [k, e[k]]));
  const device = (key: string) => t.demo.devices[key]!;

  beforeAll(async () => {
    t = await startTestApp(backend, { core: { now: () => NOW } });
    gateway = await startGateway(t, deployment, recorder);
    const created = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'golden',
      scopes: mappings.scopes.map((s) => s.name),
    });
    v2Key = created.rawKey!;
    const resolved = await resolveLegacyKey(t.core, v2Key);
    if (resolved.status !== 'active' || !resolved.bridgeApiKey) throw new Error('expected a bridged key');
    // Apart, v4 reads go through the gateway's proxy too.
    bridge = client(gateway.app, resolved.bridgeApiKey);
    const [item] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'MX Keys S'`);
    purchasableItem = item!.id;
  });
  afterAll(async () => {
    await gateway.close();
    await t.close();
  });

  const goldens = (): Record<string, Golden> => {
    const { eve, dana, erik, hans, sofia } = t.demo.employees;
    const { engineering, sales } = t.demo.teams;
    /** An order endpoint: one v4 create with the v2 body and the order type the endpoint stands for. */
    const order = (path: string, body: Doc, orderType: string): Golden => ({
      url: `/v2${path}`,
      body,
      status: 201,
      successor: path === '/orders/purchaseOrder' ? '/v4/orders/purchase' : '/v4/orders',
      expected: async (res) => v4Data(`/v4/orders/${res.body.id}`),
      calls: [{ operation: path === '/orders/purchaseOrder' ? 'create_purchase_order' : 'create_order', input: { ...body, orderType } }],
    });
    const passthrough = (url: string): Golden => ({
      url,
      status: 501,
      successor: null,
      expected: async (res) => ({ error: { status: 501, code: 'no_v4_successor', message: res.body.error.message } }),
      calls: [],
    });
    /** The v4 employee answer's teamName turned back into a teamId: one walk of the teams. */
    const teamsWalk = firstPage('list_teams');
    const inUse = { serialNumber: 'GOLD-INUSE-1', productType: 'Mice', manufacturer: 'Logitech', model: 'MX Master 3S' };
    const upload = { products: [{ serialNumber: 'GOLD-UP-1', productType: 'Monitors', manufacturer: 'Dell', model: 'U2723QE', country: 'DE' }] };
    const hub = { alias: 'Golden Hub', address: 'Speicherstadt 5', city: 'Hamburg', zipCode: '20457', country: 'DE', contactName: 'Hanna Hafen', contactEmail: 'hafen@acme.example', phone: '+49 40 555' };
    return {
      'GET /employees': {
        url: '/v2/employees',
        status: 200,
        successor: '/v4/employees',
        expected: async () => Promise.all((await v4All('/v4/employees', 'employees')).map(v2Employee)),
        calls: [firstPage('list_employees'), teamsWalk],
      },
      'GET /employees/:id': {
        url: `/v2/employees/${eve}`,
        status: 200,
        successor: `/v4/employees/${eve}`,
        expected: async () => v2Employee(await v4Data(`/v4/employees/${eve}`)),
        calls: [{ operation: 'get_employee', input: { id: eve } }, teamsWalk],
      },
      'POST /employees': {
        url: '/v2/employees',
        body: {
          displayName: 'Vera Vintage',
          email: 'vera@acme.example',
          secondaryEmail: 'vera@home.example',
          teamId: engineering,
          deliveryAddress: { addressOne: 'Hauptstraße 1', addressTwo: 'Hinterhaus', city: 'Berlin', zipCode: '10115', country: 'DE', phone: '+49 30 1234' },
        },
        status: 201,
        successor: '/v4/employees',
        expected: async (res) => {
          // v4 refuses addressTwo and phone at creation: the follow-up PATCH set them.
          expect(res.body.deliveryAddress).toMatchObject({ addressTwo: 'Hinterhaus', phone: '+49 30 1234', country: 'DE' });
          expect(res.body).toMatchObject({ secondaryEmail: 'vera@home.example', teamId: engineering });
          return v2Employee(await v4Data(`/v4/employees/${res.body.id}`));
        },
        calls: (res) => [
          { operation: 'get_team', input: { id: engineering } },
          {
            operation: 'create_employee',
            input: { displayName: 'Vera Vintage', email: 'vera@acme.example', personalEmail: 'vera@home.example', teamName: 'Engineering', addressOne: 'Hauptstraße 1', city: 'Berlin', zipCode: '10115', country: 'DE' },
          },
          { operation: 'update_employee', input: { id: res.body.id, addressTwo: 'Hinterhaus', phone: '+49 30 1234' } },
          teamsWalk,
        ],
      },
      'PATCH /employees/:id': {
        url: `/v2/employees/${dana}`,
        body: { secondaryEmail: 'dana@home.example', teamId: sales, deliveryAddress: { city: 'Potsdam', country: 'DE' } },
        status: 200,
        successor: `/v4/employees/${dana}`,
        expected: async () => v2Employee(await v4Data(`/v4/employees/${dana}`)),
        calls: [
          { operation: 'get_team', input: { id: sales } },
          { operation: 'update_employee', input: { id: dana, personalEmail: 'dana@home.example', teamName: 'Sales', city: 'Potsdam', country: 'DE' } },
          teamsWalk,
        ],
      },
      'GET /employees/:id/deliveryAddress': {
        url: `/v2/employees/${eve}/deliveryAddress`,
        status: 200,
        successor: `/v4/employees/${eve}`,
        expected: async () => addressOf(await v4Data(`/v4/employees/${eve}`)),
        calls: [{ operation: 'get_employee', input: { id: eve } }],
      },
      'POST /employees/:id/deliveryAddress': {
        url: `/v2/employees/${sofia}/deliveryAddress`,
        body: { addressOne: 'Gran Vía 1', city: 'Madrid', zipCode: '28013', country: 'ES', phone: '+34 91 000' },
        status: 200,
        successor: `/v4/employees/${sofia}`,
        expected: async () => addressOf(await v4Data(`/v4/employees/${sofia}`)),
        calls: [{ operation: 'update_employee', input: { id: sofia, addressOne: 'Gran Vía 1', city: 'Madrid', zipCode: '28013', country: 'ES', phone: '+34 91 000' } }],
      },
      'PATCH /employees/:id/deliveryAddress': {
        url: `/v2/employees/${hans}/deliveryAddress`,
        body: { addressTwo: '3. OG' },
        status: 200,
        successor: `/v4/employees/${hans}`,
        expected: async () => addressOf(await v4Data(`/v4/employees/${hans}`)),
        calls: [{ operation: 'update_employee', input: { id: hans, addressTwo: '3. OG' } }],
      },
      'POST /employees/:id/offboarding': {
        ...order('/orders', { productIds: [device('hansDesktop')] }, 'Offboarding'),
        url: `/v2/employees/${hans}/offboarding`,
        calls: [{ operation: 'create_order', input: { employeeId: hans, productIds: [device('hansDesktop')], orderType: 'Offboarding' } }],
      },
      'GET /employees/:id/products': {
        url: `/v2/employees/${eve}/products`,
        status: 200,
        successor: `/v4/employees/${eve}/devices`,
        expected: async () => v4All(`/v4/employees/${eve}/devices`, 'devices'),
        calls: [firstPage('get_assigned_devices', { id: eve })],
      },
      'POST /employees/products/productInUse': {
        url: '/v2/employees/products/productInUse',
        body: { employeeId: eve, ...inUse },
        status: 201,
        successor: '/v4/employees/:id/devices',
        expected: async (res) => v4Data(`/v4/products/${res.body.id}`),
        calls: [{ operation: 'register_device_in_use', input: { id: eve, ...inUse } }],
      },
      'GET /teams': {
        url: '/v2/teams',
        status: 200,
        successor: '/v4/teams',
        expected: async () => v4All('/v4/teams', 'teams'),
        calls: [firstPage('list_teams')],
      },
      'GET /teams/:teamId': {
        url: `/v2/teams/${engineering}`,
        status: 200,
        successor: `/v4/teams/${engineering}`,
        expected: async () => v4Data(`/v4/teams/${engineering}`),
        calls: [{ operation: 'get_team', input: { id: engineering } }],
      },
      'POST /teams': {
        url: '/v2/teams',
        body: { name: 'Golden Team' },
        status: 201,
        successor: '/v4/teams',
        expected: async (res) => writtenTeam(res.body.id),
        calls: [{ operation: 'create_team', input: { name: 'Golden Team' } }],
      },
      'PATCH /teams/:teamId': {
        url: `/v2/teams/${t.demo.teams.operations}`,
        body: { name: 'Customer Support' },
        status: 200,
        successor: `/v4/teams/${t.demo.teams.operations}`,
        expected: async () => writtenTeam(t.demo.teams.operations),
        calls: [{ operation: 'update_team', input: { id: t.demo.teams.operations, name: 'Customer Support' } }],
      },
      'GET /orders': {
        url: '/v2/orders',
        status: 200,
        successor: '/v4/orders',
        expected: async () => v4All('/v4/orders', 'orders'),
        calls: [firstPage('list_orders')],
      },
      'POST /orders/assignToEmployee': order('/orders/assignToEmployee', { employeeId: dana, productIds: [device('stockLaptopDe1')] }, 'Deployment'),
      'POST /orders/offboarding': order(
        '/orders/offboarding',
        { employeeId: erik, productIds: [device('erikLaptop')], dispositions: [{ productId: device('erikLaptop'), action: 'keep' }] },
        'Offboarding',
      ),
      'POST /orders/collection': order('/orders/collection', { employeeId: eve, productIds: [device('evePhone')] }, 'Collection'),
      'POST /orders/swap': order(
        '/orders/swap',
        {
          employeeId: eve,
          productIds: [device('eveLaptop'), device('stockLaptopUs1')],
          dispositions: [{ productId: device('eveLaptop'), action: 'wipe_and_redeploy' }],
        },
        'Swap from Inventory',
      ),
      'POST /orders/purchaseOrder': order(
        '/orders/purchaseOrder',
        { items: [{ itemId: purchasableItem, quantity: 1, country: 'US' }] },
        'Purchase for Inventory',
      ),
      'GET /products': {
        url: '/v2/products',
        status: 200,
        successor: '/v4/inventory',
        expected: async () => v4All('/v4/inventory', 'devices'),
        calls: [firstPage('search_inventory')],
      },
      'GET /products/:productId': {
        url: `/v2/products/${device('stockTablet')}`,
        status: 200,
        successor: `/v4/products/${device('stockTablet')}`,
        expected: async () => v4Data(`/v4/products/${device('stockTablet')}`),
        calls: [{ operation: 'get_product', input: { id: device('stockTablet') } }],
      },
      'POST /products/uploadProducts': {
        url: '/v2/products/uploadProducts',
        body: upload,
        status: 201,
        successor: '/v4/products',
        expected: async (res) => ({ products: [await v4Data(`/v4/products/${res.body.products[0].id}`)] }),
        calls: [{ operation: 'register_products', input: upload }],
      },
      'POST /products/addPinCode': {
        url: '/v2/products/addPinCode',
        body: { productId: device('stockTablet'), pinCode: '4321' },
        status: 200,
        successor: '/v4/products/pin-code',
        expected: async () => v4Data(`/v4/products/${device('stockTablet')}`),
        calls: [{ operation: 'add_product_pin_code', input: { productId: device('stockTablet'), pinCode: '4321' } }],
      },
      'GET /companyAddresses': {
        url: '/v2/companyAddresses',
        status: 200,
        successor: '/v4/company/addresses',
        expected: async () => v4All('/v4/company/addresses', 'addresses'),
        calls: [firstPage('list_company_addresses')],
      },
      'POST /companyAddresses': {
        url: '/v2/companyAddresses',
        body: hub,
        status: 201,
        successor: '/v4/company/addresses',
        expected: async (res) => (await v4All('/v4/company/addresses', 'addresses')).find((a) => a.id === res.body.id),
        calls: [{ operation: 'create_company_address', input: hub }],
      },
      'GET /catalogs': passthrough('/v2/catalogs'),
      'GET /catalogs/:catalogId/items': passthrough('/v2/catalogs/cat_1/items'),
      'GET /company': passthrough('/v2/company'),
      'PATCH /company': passthrough('/v2/company'),
      'PATCH /orders/:orderId': passthrough('/v2/orders/ord_1'),
      'GET /organization': passthrough('/v2/organization'),
      'GET /organization/companies': passthrough('/v2/organization/companies'),
      'GET /organization/employees': passthrough('/v2/organization/employees'),
    };
  };

  it('has a golden case for every route of the maps, and none for a route it does not serve', () => {
    expect(Object.keys(goldens()).sort()).toEqual([...ROUTES].sort());
  });

  // Iterates the shipped maps, so a route added to v2-routes.yaml without a golden case fails here.
  it.each(ROUTES)('%s answers the translated v4 result with the deprecation headers', async (key) => {
    const golden = goldens()[key];
    expect(golden, `no golden case for ${key}`).toBeDefined();
    const { url, body, status, successor, expected, calls } = golden!;
    // A gateway of its own, so that its lookups start cold and every v4 call shows.
    const cold = await startGateway(t, deployment, recorder);
    let res: ApiResponse;
    try {
      recorder.take();
      res = await v2(v2Key, key.split(' ')[0] as Method, url, body, cold.app);
    } finally {
      await cold.close();
    }
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(recorder.take()).toEqual(typeof calls === 'function' ? calls(res) : calls);
    expect(res.body).toEqual(await expected(res));
    expect(res.headers.deprecation).toBe(DEPRECATION);
    expect(res.headers.sunset).toBe(SUNSET);
    if (successor === null) expect(res.headers.link).not.toContain('rel="successor-version"');
    else expect(res.headers.link).toContain(`<${successor}>; rel="successor-version"`);
    expect(res.headers.link).toContain(`</docs/migration#${routeAnchor({ method: key.split(' ')[0] as Method, path: key.split(' ')[1]! })}>; rel="deprecation"`);
  });

  it('reuses the team lookups of a key across requests until a team changes', async () => {
    const url = `/v2/employees/${t.demo.employees.eve}`;
    const lookups = () => recorder.take().filter((call) => call.operation === 'list_teams').length;
    await v2(v2Key, 'GET', url);
    recorder.take();
    const again = await v2(v2Key, 'GET', url);
    expect(again.body.teamId).toBe(t.demo.teams.sales);
    expect(lookups()).toBe(0);
    // Renamed through v4: the gateway's next answer looks the teams up again, and still finds the id.
    const seen = gateway.core.changes.generation('teams');
    expect((await bridge.patch(`/v4/teams/${t.demo.teams.sales}`, { name: 'Sales & Success' })).status).toBe(200);
    await vi.waitFor(() => expect(gateway.core.changes.generation('teams')).toBeGreaterThan(seen), EVENTUALLY);
    const renamed = await v2(v2Key, 'GET', url);
    expect(lookups()).toBe(1);
    expect(renamed.body.teamId).toBe(t.demo.teams.sales);
    expect((await bridge.patch(`/v4/teams/${t.demo.teams.sales}`, { name: 'Sales' })).status).toBe(200);
  });

  it('answers v2 lists as bare arrays with the legacy employee fields', async () => {
    const res = await v2(v2Key, 'GET', '/v2/employees');
    expect(Array.isArray(res.body)).toBe(true);
    const eve = res.body.find((e: Doc) => e.id === t.demo.employees.eve);
    expect(eve).toMatchObject({ teamId: t.demo.teams.sales, deliveryAddress: { city: 'San Francisco', country: 'US' } });
    expect(eve).toHaveProperty('secondaryEmail');
    expect(eve).not.toHaveProperty('personalEmail');
    expect(res.body.every((e: Doc) => e.companyId === t.demo.companies.acme)).toBe(true);
  });

  it('filters by teamId through the team name, and answers 404 for an unknown team', async () => {
    const res = await v2(v2Key, 'GET', `/v2/employees?teamId=${t.demo.teams.engineering}`);
    expect(res.status).toBe(200);
    const expected = (await v4All('/v4/employees?teamName=Engineering', 'employees')).map((e) => e.id);
    expect(res.body.map((e: Doc) => e.id)).toEqual(expected);
    expect(res.body.every((e: Doc) => e.teamId === t.demo.teams.engineering)).toBe(true);
    const unknown = await v2(v2Key, 'GET', '/v2/employees?teamId=team_missing');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('refuses invitation=true on an employee read, naming the field', async () => {
    const res = await v2(v2Key, 'GET', `/v2/employees/${t.demo.employees.eve}?invitation=true`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('invitation=true');
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'invitation', rule: 'refused' })]);
    expect(res.headers.deprecation).toBe(DEPRECATION);
    expect((await v2(v2Key, 'GET', `/v2/employees/${t.demo.employees.eve}?invitation=false`)).status).toBe(200);
  });

  it('keeps the v4 status, code and message of an error in the v2 shape', async () => {
    const dup = await v2(v2Key, 'POST', '/v2/teams', { name: 'Engineering' });
    const direct = await bridge.post('/v4/teams', { name: 'Engineering' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: { status: 409, ...direct.body.error } });
    const missingCountry = await v2(v2Key, 'POST', `/v2/employees/${t.demo.employees.noah}/deliveryAddress`, { city: 'Boston' });
    expect(missingCountry.status).toBe(400);
    expect(missingCountry.body.error.details).toEqual([expect.objectContaining({ field: 'country', rule: 'required' })]);
  });

  it('refuses keys that are missing, unknown, v4 keys, or lack the route scope', async () => {
    const missing = await v2(undefined, 'GET', '/v2/teams');
    expect(missing.status).toBe(401);
    expect(missing.body.error).toMatchObject({ status: 401, code: 'missing_api_key' });
    expect(missing.headers.sunset).toBe(SUNSET);
    expect((await v2('lk_live_not-a-registered-key', 'GET', '/v2/teams')).body.error.code).toBe('invalid_api_key');
    const v4Key = await v2(t.demo.apiKeys.admin, 'GET', '/v2/teams');
    expect(v4Key.status).toBe(401);
    expect(v4Key.body.error.code).toBe('v4_key_on_v2');
    expect(v4Key.body.error.message).toContain('legacy keys only');

    const teamsOnly = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'teams only', scopes: ['api.teams.getAll'] });
    expect((await v2(teamsOnly.rawKey, 'GET', '/v2/teams')).status).toBe(200);
    const denied = await v2(teamsOnly.rawKey, 'GET', '/v2/employees');
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ code: 'missing_scope', details: { required: 'api.employees.getAll' } });
    expect(denied.body.error.message).toContain('api.employees.getAll');
  });

  it('lets an address-only key change the address and nothing else', async () => {
    const { erik } = t.demo.employees;
    const addressOnly = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'address book', scopes: ADDRESS_SCOPES });
    const before = await v4Data(`/v4/employees/${erik}`);
    const sneaky = { city: 'Uppsala', country: 'SE', displayName: 'Hacked', personalEmail: 'x@evil.example', teamName: 'Sales', jobTitle: 'CEO' };
    const res = await v2(addressOnly.rawKey, 'PATCH', `/v2/employees/${erik}/deliveryAddress`, sneaky);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ city: 'Uppsala', country: 'SE' });
    const after = await v4Data(`/v4/employees/${erik}`);
    expect(after).toEqual({ ...before, city: 'Uppsala', updatedAt: after.updatedAt });

    const whole = await v2(addressOnly.rawKey, 'PATCH', `/v2/employees/${erik}`, { jobTitle: 'CEO' });
    expect(whole.status).toBe(403);
    expect(whole.body.error.code).toBe('missing_scope');
    expect((await v4Data(`/v4/employees/${erik}`)).jobTitle).toBe(before.jobTitle);
  });

  it('answers 401 from the next request once the key is disabled, and counts usage per endpoint', async () => {
    const key = await createLegacyKey(t.core, mappings, { companyId: t.demo.companies.acme, name: 'soon gone', scopes: ['api.teams.getAll'] });
    expect((await v2(key.rawKey, 'GET', '/v2/teams')).status).toBe(200);
    // Usage is counted by the gateway's core, wherever the gateway runs.
    expect(await legacyKeyUsage(gateway.core, key.id)).toEqual([{ day: '2026-06-01', endpoint: 'GET /teams', scope: 'api.teams.getAll', calls: 1 }]);
    // Apart, the gateway's cache drops the key when the database's notification reaches it (at once together).
    const seen = gateway.core.changes.generation('credentials');
    await disableLegacyKey(t.core, key.id);
    await vi.waitFor(() => expect(gateway.core.changes.generation('credentials')).toBeGreaterThan(seen), EVENTUALLY);
    const res = await v2(key.rawKey, 'GET', '/v2/teams');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('legacy_key_disabled');
  });

  it('says a passthrough route stays on v2 when no upstream is configured', async () => {
    const res = await v2(v2Key, 'GET', '/v2/catalogs');
    expect(res.status).toBe(501);
    expect(res.body.error.code).toBe('no_v4_successor');
    expect(res.body.error.message).toContain('api.catalogs.getAll');
    expect(res.body.error.message).toContain('stays on v2');
  });

  it('answers 410 during a brownout and after the sunset, with the headers', async () => {
    const brownout = await startTestApp(backend, { seed: false, core: { now: () => new Date('2026-12-01T15:00:00Z') } });
    try {
      const res = await client(brownout.app).get('/v2/teams');
      expect(res.status).toBe(410);
      expect(res.body.error).toMatchObject({ status: 410, code: 'v2_brownout' });
      expect(res.headers.deprecation).toBe(DEPRECATION);
    } finally {
      await brownout.close();
    }
  });
});

describe.each(backends())('v2 list ceiling [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    const tiny = { ...mappings, sunset: { ...mappings.sunset, listCeiling: 3 } };
    t = await startTestApp(backend, { core: { now: () => NOW, mappings: tiny } });
  });
  afterAll(() => t.close());

  it('fails past the ceiling instead of truncating, and answers lists within it', async () => {
    const key = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'ceiling',
      scopes: ['api.employees.getAll', 'api.teams.getAll'],
    });
    const res = await client(t.app, key.rawKey).get('/v2/employees');
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ status: 422, code: 'v2_list_too_large', details: { ceiling: 3 } });
    const teams = await client(t.app, key.rawKey).get('/v2/teams');
    expect(teams.status).toBe(200);
    expect(teams.body.length).toBeLessThanOrEqual(3);
  });
});

/** One HTTP request with the path exactly as given (fetch and inject would resolve its dot segments). */
function rawRequest(port: number, method: string, path: string, apiKey: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = method === 'GET' ? undefined : JSON.stringify({ status: 'Shipped' });
    const request = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: { 'x-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) } },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe.each(backends())('v2 routes without a v4 successor, forwarded [%s]', (backend) => {
  const UPSTREAM = 'http://legacy-v2.test';
  let t: TestApp;
  let rawKey: string;
  beforeAll(async () => {
    // Only the legacy API is mocked; the PostgreSQL backend stays reachable on loopback.
    nock.disableNetConnect();
    nock.enableNetConnect(/127\.0\.0\.1|localhost/);
    // A budget no busy machine's successful forward reaches; only the too-slow case waits it out.
    t = await startTestApp(backend, { config: { legacyV2Upstream: `${UPSTREAM}/api`, legacyV2TimeoutMs: 2_000 }, core: { now: () => NOW } });
    const key = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'catalog sync',
      scopes: ['api.catalogs.getAll', 'api.company.update'],
    });
    rawKey = key.rawKey!;
  });
  afterEach(() => {
    nock.cleanAll();
  });
  afterAll(async () => {
    await t.close();
    nock.enableNetConnect();
  });

  it('forwards path, query, key and body unchanged and passes the answer on with the deprecation headers', async () => {
    const scope = nock(UPSTREAM, { reqheaders: { 'x-api-key': rawKey } })
      .get('/api/catalogs?page=2')
      .reply(200, [{ id: 'cat_1', name: 'Laptops' }])
      .patch('/api/company', { name: 'Acme GmbH' })
      .reply(422, { error: { status: 422, code: 'invalid_name', message: 'no' } });
    const read = await client(t.app, rawKey).get('/v2/catalogs?page=2');
    expect(read.status).toBe(200);
    expect(read.body).toEqual([{ id: 'cat_1', name: 'Laptops' }]);
    expect(read.headers.deprecation).toBe(DEPRECATION);
    const write = await client(t.app, rawKey).patch('/v2/company', { name: 'Acme GmbH' });
    expect(write.status).toBe(422);
    expect(write.body.error.code).toBe('invalid_name');
    expect(scope.isDone()).toBe(true);
  });

  // Hostile review: the raw URL was forwarded, and `new URL()` resolved its dot segments, so
  // PATCH /v2/orders/%2e%2e reached the legacy API as PATCH / and GET /v2/catalogs/%2e%2e/items as GET /items.
  it('forwards exactly the matched route with its parameters encoded, and refuses parameters that leave it', async () => {
    const narrow = await createLegacyKey(t.core, mappings, {
      companyId: t.demo.companies.acme,
      name: 'order updater',
      scopes: ['api.orders.update', 'api.catalogs.items.getAll'],
    });
    const legacy = client(t.app, narrow.rawKey);
    // Sent over a socket as written: an in-process request would normalise the path before the router saw it.
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    for (const [method, path] of [
      ['PATCH', '/v2/orders/%2e%2e'],
      ['PATCH', '/v2/orders/%2E'],
      ['PATCH', '/v2/orders/a%2Fb'],
      ['GET', '/v2/catalogs/%2e%2e/items'],
      ['GET', '/v2/catalogs/x%5C..%5C/items'],
    ] as const) {
      const res = await rawRequest(port, method, path, narrow.rawKey!);
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body).error.details[0]).toMatchObject({ rule: 'path_segment' });
    }
    const scope = nock(UPSTREAM)
      .patch('/api/orders/ord%20one', { status: 'Shipped' })
      .reply(200, { id: 'ord one' })
      .get('/api/catalogs/cat%3Fx/items?page=2')
      .reply(200, []);
    expect((await legacy.patch('/v2/orders/ord%20one', { status: 'Shipped' })).status).toBe(200);
    expect((await legacy.get('/v2/catalogs/cat%3Fx/items?page=2')).status).toBe(200);
    expect(scope.isDone()).toBe(true);
  });

  it('still checks the scope before forwarding', async () => {
    const res = await client(t.app, rawKey).get('/v2/company');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('missing_scope');
  });

  it('answers 502 when the legacy API is down and 504 when it is too slow', async () => {
    nock(UPSTREAM).get('/api/catalogs').replyWithError('connect ECONNREFUSED');
    const down = await client(t.app, rawKey).get('/v2/catalogs');
    expect(down.status).toBe(502);
    expect(down.body.error).toMatchObject({ status: 502, code: 'v2_upstream_unavailable' });
    expect(down.headers.sunset).toBe(SUNSET);

    nock(UPSTREAM).get('/api/catalogs').delay(10_000).reply(200, []);
    const slow = await client(t.app, rawKey).get('/v2/catalogs');
    expect(slow.status).toBe(504);
    expect(slow.body.error.code).toBe('v2_upstream_timeout');
  });
});
