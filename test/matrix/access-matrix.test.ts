import { createServer, type Server } from 'node:http';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES } from '../../src/access/capabilities.js';
import { createCompany, createUser, mintKeyForUser, revokeKey, setUserDisabled } from '../../src/domain/admin.js';
import { setUserPassword } from '../../src/access/passwords.js';
import { mintSuccessorKey } from '../../src/migration/cutover.js';
import { createLegacyKey, disableLegacyKey } from '../../src/legacy/legacy-keys.js';
import { OPERATIONS } from '../../src/app/operation-table.js';
import type { AnyOperation } from '../../src/operations/operation.js';
import { isOAuthScope, OAUTH_SCOPES } from '../../src/oauth/scopes.js';
import { sql } from '../../src/store/sql.js';
import { requestOf } from '../../cli/operations.js';
import { backends, client, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { insertOrder } from '../helpers/orders.js';
import { initializeBody, rawPost } from '../mcp/support/mcp.js';
import { authorizationRequest, authorizeInBrowser, discoverAndRegister, exchangeCode, FormBrowser, INSECURE, DEMO_PASSWORD, type RegisteredClient } from '../oauth/support.js';
import { kebabCase } from '../../cli/args.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';
import { applies, CREDENTIALS, expected, expectedV2, unreachable, type Credential, type Outcome, type Surface } from './expectations.js';
import { FIXTURES, V2_FIXTURES, type World, type WorldIds } from './fixtures.js';

/*
 * Issue 8, access matrix: every operation of the table on every surface (REST, MCP, CLI, v2
 * through the gateway) against every credential kind, each cell's outcome derived by
 * expectations.ts from the spec's rules. Real server, real OAuth tokens through the pages,
 * `svc` itself (run in this process), the gateway's v2 routes with registered legacy keys.
 */

const CLI_CONCURRENCY = 4;
const HOUR_MS = 3_600_000;

/** One query field as svc flags: lists comma-separated, a true boolean as a bare flag. */
function queryFlag(field: string, value: unknown): string[] {
  if (value === undefined || value === false) return [];
  if (value === true) return [`--${kebabCase(field)}`];
  return [`--${kebabCase(field)}`, Array.isArray(value) ? value.join(',') : String(value)];
}

interface Observation {
  outcome: Outcome | string;
  detail: string;
}

interface Cell {
  surface: Surface;
  op: string;
  credential: Credential;
  expected: Outcome;
  got: Observation;
}

/** The 401 codes: the CLI's JSON envelope carries the code but not the status. */
const UNAUTHENTICATED_CODES = new Set(['unauthenticated', 'authentication_required', 'invalid_api_key', 'user_disabled', 'invalid_token', 'missing_api_key', 'v4_key_on_v2', 'legacy_key_disabled']);

/** The one vocabulary every surface's answer is read into: error codes (REST, MCP, CLI, v2 share them). */
function outcomeOfCode(code: string | undefined, status?: number): Outcome | string {
  if (code !== undefined && UNAUTHENTICATED_CODES.has(code)) return 'unauthenticated';
  switch (code) {
    case 'api_key_not_user_bound':
      return 'not_user_bound';
    case 'missing_capability':
    case 'insufficient_scope':
    case 'missing_scope':
    case 'not_found':
      return code;
    case 'admin_only':
    case 'logistics_only':
      return 'role_forbidden';
    case 'non_personal_user':
      return 'non_personal_forbidden';
    case 'company_not_accessible':
      return 'company_forbidden';
    case 'team_not_in_scope':
    case 'out_of_scope':
      return 'scope_forbidden';
    case 'order_constraints_violated':
      return 'rules_refused';
  }
  if (status === 401) return 'unauthenticated';
  return `${status ?? '?'} ${code ?? 'no code'}`;
}

/** A success; validate_order_constraints answers 200 with valid false when a rule refuses. */
function successOutcome(op: string, data: unknown): Outcome {
  return op === 'validate_order_constraints' && (data as { valid?: boolean }).valid === false ? 'rules_refused' : 'ok';
}

/** Stands in for the legacy v2 API (an external system) behind the routes without a v4 successor. */
function legacyStub(): Promise<{ server: Server; url: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"stub":"legacy v2"}');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

async function mapLimit<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await run(items[next++]!);
  }));
}

describe.each(backends())('access matrix (%s)', (backend) => {
  let t: ListeningTestApp;
  let stub: Awaited<ReturnType<typeof legacyStub>>;
  let skewMs = 0;
  let world: World;
  let serial = 0;
  const keys = new Map<string, string>();
  const tokens = new Map<string, string>();
  const legacy = new Map<string, string>();
  const sessions = new Map<string, string>();

  const unique = (prefix: string) => `${prefix}-${backend}-${Date.now().toString(36)}-${++serial}`;
  const adminKey = () => keys.get('admin_all')!;

  async function oauthToken(email: string, scopes: readonly string[]): Promise<{ token: string; registered: RegisteredClient }> {
    const registered = await discoverAndRegister(t.baseUrl);
    const request = await authorizationRequest(registered, t.mcpUrl, scopes.join(' '));
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri, { email, grant: [...scopes] });
    const response = await exchangeCode(registered, callback, request, t.mcpUrl);
    return { token: response.access_token, registered };
  }

  /** Where a cell's credential lives: per-capability variants are keyed by the operation's capability. */
  function variant(credential: Credential, op: AnyOperation): string {
    return ['capable_key', 'incapable_key', 'oauth_unscoped'].includes(credential) ? `${credential}:${op.capability ?? 'none'}` : credential;
  }

  function headersFor(credential: Credential, op: AnyOperation, legacyRoute?: { scope: string }): Record<string, string> {
    const key = variant(credential, op);
    if (credential.startsWith('legacy_key')) {
      const which = credential === 'legacy_key_unscoped' ? (legacyRoute?.scope === 'api.teams.getAll' ? 'only_company_get' : 'only_teams') : credential;
      return { 'x-api-key': legacy.get(which)! };
    }
    if (tokens.has(key)) return { authorization: `Bearer ${tokens.get(key)}` };
    if (keys.has(key)) return { 'x-api-key': keys.get(key)! };
    if (credential === 'no_credential') return {};
    throw new Error(`no credential material for ${key}`);
  }

  async function openSession(headers: Record<string, string>): Promise<string | undefined> {
    const response = await rawPost(t.mcpUrl, initializeBody(), headers);
    const id = response.headers.get('mcp-session-id') ?? undefined;
    await response.text();
    if (id) await (await rawPost(t.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...headers, 'mcp-session-id': id })).text();
    return id;
  }

  async function sessionFor(credential: Credential, op: AnyOperation): Promise<string | undefined> {
    const key = variant(credential, op);
    if (!sessions.has(key)) {
      const id = await openSession(headersFor(credential, op));
      if (id) sessions.set(key, id);
    }
    return sessions.get(key);
  }

  async function inputFor(op: AnyOperation, credential: Credential): Promise<Record<string, unknown>> {
    const fixture = FIXTURES[op.name];
    if (!fixture) throw new Error(`no fixture for ${op.name}: add one to test/matrix/fixtures.ts`);
    const scoped = unreachable(credential).length > 0;
    return (scoped && fixture.outside ? fixture.outside : fixture.owner)(world);
  }

  /** A successful answer of a scoped credential must not show what it cannot reach. */
  function leakIn(credential: Credential, body: unknown): string | undefined {
    const text = JSON.stringify(body);
    const ids = world.ids;
    const idsOf = { employee: [ids.sofia, ids.sofiaDevice, ids.sofiaOrder], team: [ids.sales], company: [ids.acme] } as const;
    return unreachable(credential).flatMap((resource) => idsOf[resource]).find((id) => text.includes(id));
  }

  function settle(credential: Credential, op: string, outcome: Outcome | string, body: unknown, detail: string): Observation {
    const leaked = outcome === 'ok' ? leakIn(credential, body) : undefined;
    return leaked ? { outcome: 'leak', detail: `shows ${leaked}` } : { outcome, detail: `${op}: ${detail}` };
  }

  beforeAll(async () => {
    stub = await legacyStub();
    t = await startListeningApp(backend, { config: { legacyV2Upstream: stub.url }, core: { now: () => new Date(Date.now() + skewMs) } });
    const { db } = t.core;
    const demo = t.demo;
    for (const capability of CAPABILITIES) {
      keys.set(`capable_key:${capability}`, (await mintKeyForUser(db, demo.emails.admin, [capability], 'matrix capable')).rawKey);
      keys.set(`incapable_key:${capability}`, (await mintKeyForUser(db, demo.emails.admin, CAPABILITIES.filter((c) => c !== capability), 'matrix incapable')).rawKey);
    }
    keys.set('capable_key:none', (await mintKeyForUser(db, demo.emails.admin, ['mcp:employees:read'], 'matrix any')).rawKey);
    keys.set('admin_all', (await mintKeyForUser(db, demo.emails.admin, 'all', 'matrix admin')).rawKey);
    keys.set('manager_key', demo.apiKeys.manager);
    keys.set('employee_key', demo.apiKeys.employee);

    const foreignCompany = await createCompany(db, 'Initech', 'co_initech');
    await createUser(db, { email: 'admin@initech.example', displayName: 'Ina Initech', role: 'admin', companyIds: [foreignCompany] });
    keys.set('foreign_admin_key', (await mintKeyForUser(db, 'admin@initech.example', 'all', 'matrix foreign')).rawKey);
    const disabledEmail = 'soon-disabled@acme.example';
    await createUser(db, { email: disabledEmail, displayName: 'Dee Disabled', role: 'admin', companyIds: [demo.companies.acme] });
    await setUserPassword(db, disabledEmail, DEMO_PASSWORD);
    keys.set('disabled_user_key', (await mintKeyForUser(db, disabledEmail, 'all', 'matrix disabled')).rawKey);
    const revoked = await mintKeyForUser(db, demo.emails.admin, 'all', 'matrix revoked');
    keys.set('revoked_key', revoked.rawKey);

    const admin = client(t.app, adminKey());
    const must = async <T>(response: Promise<{ status: number; body: { data: T } }>): Promise<T> => {
      const answer = await response;
      if (answer.status >= 300) throw new Error(`setup call failed: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body.data;
    };
    const newDevice = () => ({ serialNumber: unique('SN-MX'), productType: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad T14' });
    const freshAssignedDevice = async (employeeId: string) => (await must<{ id: string }>(admin.post(`/v4/employees/${employeeId}/devices`, newDevice()))).id;
    const freshOrder = async (employeeId: string) => {
      const deviceId = await freshAssignedDevice(employeeId);
      const orderId = await insertOrder(t, { orderType: 'Maintenance', employeeId, country: employeeId === demo.employees.sofia ? 'ES' : 'DE', createdAt: new Date(Date.now() - HOUR_MS), devices: [{ deviceId, role: 'service' }] });
      return { orderId, deviceId };
    };
    const sofiaOrder = await freshOrder(demo.employees.sofia);
    const [catalogItem] = await db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'ThinkPad X1 Carbon Gen 12'`);

    const scopeNames = t.core.mappings.scopes.map((entry) => entry.name);
    const register = async (companyId: string, name: string, scopes: string[]) => createLegacyKey(t.core, t.core.mappings, { companyId, name, scopes });
    const acmeLegacy = await register(demo.companies.acme, 'matrix acme', scopeNames);
    legacy.set('legacy_key', acmeLegacy.rawKey!);
    // Its successor, minted by the demo admin with everything the key's scopes reach.
    const demoAdmin = await t.core.auth.authenticate({ 'x-api-key': demo.apiKeys.admin });
    const successor = await mintSuccessorKey(t.core, acmeLegacy.id, { ...demoAdmin, companyIds: [demo.companies.acme], capabilities: new Set(CAPABILITIES) }, { capabilities: [...CAPABILITIES] });
    keys.set('successor_key', successor.successor.apiKey);
    legacy.set('only_teams', (await register(demo.companies.acme, 'matrix teams only', ['api.teams.getAll'])).rawKey!);
    legacy.set('only_company_get', (await register(demo.companies.acme, 'matrix company only', ['api.company.get'])).rawKey!);
    legacy.set('legacy_key_foreign', (await register(demo.companies.globex, 'matrix globex', scopeNames)).rawKey!);
    const toDisable = await register(demo.companies.acme, 'matrix disabled', scopeNames);
    legacy.set('legacy_key_disabled', toDisable.rawKey!);

    const freshLegacyKey = async () => (await register(demo.companies.acme, unique('matrix cutover'), ['api.employees.getAll', 'api.company.addresses.create'])).id;
    const ids: WorldIds = {
      acme: demo.companies.acme,
      dana: demo.employees.dana,
      sofia: demo.employees.sofia,
      engineering: demo.teams.engineering,
      sales: demo.teams.sales,
      renameTeam: (await must<{ id: string }>(admin.post('/v4/teams', { companyId: demo.companies.acme, name: unique('Matrix rename') }))).id,
      danaLaptop: demo.devices.danaLaptop!,
      sofiaDevice: sofiaOrder.deviceId,
      danaOrder: (await freshOrder(demo.employees.dana)).orderId,
      sofiaOrder: sofiaOrder.orderId,
      stockDe: demo.devices.stockLaptopDe1!,
      stockUs: demo.devices.stockLaptopUs2!,
      catalogItem: catalogItem!.id,
      legacyKeyId: acmeLegacy.id,
    };
    world = {
      ids,
      unique,
      freshAssignedDevice,
      freshOrder,
      freshLegacyKey,
      freshDisabledLegacyKey: async () => (await disableLegacyKey(t.core, await freshLegacyKey())).id,
      freshStockDevice: async () =>
        (await must<{ products: Array<{ id: string }> }>(admin.post('/v4/products', { companyId: ids.acme, products: [{ ...newDevice(), country: 'DE' }] }))).products[0]!.id,
    };

    // OAuth: real tokens through discovery, registration, the sign-in and consent pages and the token endpoint.
    tokens.set('oauth_scoped', (await oauthToken(demo.emails.admin, OAUTH_SCOPES)).token);
    for (const capability of CAPABILITIES) {
      // A capability OAuth never grants is lacking from every token: the full token stands for it.
      const token = isOAuthScope(capability) ? (await oauthToken(demo.emails.admin, OAUTH_SCOPES.filter((s) => s !== capability))).token : tokens.get('oauth_scoped')!;
      tokens.set(`oauth_unscoped:${capability}`, token);
    }
    tokens.set('expired_token', (await oauthToken(demo.emails.admin, OAUTH_SCOPES)).token);
    tokens.set('disabled_user_token', (await oauthToken(disabledEmail, OAUTH_SCOPES)).token);
    const toRevoke = await oauthToken(demo.emails.admin, OAUTH_SCOPES);
    tokens.set('revoked_token', toRevoke.token);

    // Sessions opened while the credentials worked: revocation and disabling must stop them on the next request.
    const anyOp = OPERATIONS[0]!;
    for (const credential of ['revoked_key', 'revoked_token', 'expired_token', 'disabled_user_key', 'disabled_user_token'] as const) {
      const id = await openSession(headersFor(credential, anyOp));
      if (!id) throw new Error(`no MCP session for ${credential} before it was revoked`);
      sessions.set(credential, id);
    }
    await revokeKey(db, revoked.keyId);
    await oauth.processRevocationResponse(await oauth.revocationRequest(toRevoke.registered.as, toRevoke.registered.client, oauth.None(), toRevoke.token, INSECURE));
    await setUserDisabled(db, disabledEmail, true);
    await disableLegacyKey(t.core, toDisable.id);
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => stub?.server.close(resolve));
  });

  function report(cells: Cell[], surface: Surface): void {
    const wrong = cells.filter((c) => c.got.outcome !== c.expected);
    const tally = new Map<string, number>();
    for (const c of cells) tally.set(c.expected, (tally.get(c.expected) ?? 0) + 1);
    console.info(`access matrix ${backend} ${surface}: ${cells.length} cells (${[...tally].map(([o, n]) => `${o} ${n}`).join(', ')}), ${wrong.length} differ`);
    for (const c of wrong) console.error(`  ${c.op} × ${c.surface} × ${c.credential}: expected ${c.expected}, got ${c.got.outcome} (${c.got.detail})`);
    expect(wrong.map((c) => `${c.op} × ${c.surface} × ${c.credential}: expected ${c.expected}, got ${c.got.outcome}`)).toEqual([]);
  }

  async function restCell(op: AnyOperation, credential: Credential): Promise<Observation> {
    const request = requestOf(op, await inputFor(op, credential));
    const url = request.query ? `${request.path}?${new URLSearchParams(request.query)}` : request.path;
    const response = await t.app.inject({ method: request.method, url, headers: headersFor(credential, op), ...(request.body ? { payload: request.body } : {}) });
    const body = response.json() as { ok: boolean; data?: unknown; error?: { code: string } };
    if (response.statusCode < 300) return settle(credential, op.name, successOutcome(op.name, body.data), body.data, `${response.statusCode}`);
    return settle(credential, op.name, outcomeOfCode(body.error?.code, response.statusCode), body, `${response.statusCode} ${body.error?.code}`);
  }

  it('REST: every operation × every credential', async () => {
    const cells: Cell[] = [];
    for (const op of OPERATIONS) {
      for (const credential of CREDENTIALS) {
        if (!applies(op, 'rest', credential)) continue;
        cells.push({ surface: 'rest', op: op.name, credential, expected: expected(op, 'rest', credential, FIXTURES[op.name]!.target), got: await restCell(op, credential) });
      }
    }
    report(cells, 'rest');
  });

  async function mcpCell(op: AnyOperation, credential: Credential): Promise<Observation> {
    const headers = headersFor(credential, op);
    const session = await sessionFor(credential, op);
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: op.name, arguments: await inputFor(op, credential) } };
    const response = await rawPost(t.mcpUrl, call, { ...headers, ...(session ? { 'mcp-session-id': session } : {}) });
    const body = (await response.json()) as {
      result?: { isError?: boolean; structuredContent?: unknown; content: Array<{ text: string }> };
      error?: { code?: unknown; data?: { code?: string } };
    };
    if (response.status !== 200) {
      // A JSON-RPC error carries our code in data; a refusal before the endpoint, in the v4 envelope.
      const code = typeof body.error?.code === 'string' ? body.error.code : body.error?.data?.code;
      // Spec, Errors: every 401 of the MCP endpoint points to the protected-resource metadata.
      const challenged = response.status !== 401 || /resource_metadata="[^"]+"/.test(response.headers.get('www-authenticate') ?? '');
      const outcome = challenged ? outcomeOfCode(code, response.status) : '401 without WWW-Authenticate';
      return settle(credential, op.name, outcome, body, `HTTP ${response.status} ${code}`);
    }
    if (!body.result) return { outcome: `jsonrpc error`, detail: JSON.stringify(body).slice(0, 200) };
    if (!body.result.isError) return settle(credential, op.name, successOutcome(op.name, body.result.structuredContent), body.result.structuredContent, 'result');
    const error = (JSON.parse(body.result.content[0]!.text) as { error: { code: string } }).error;
    return settle(credential, op.name, outcomeOfCode(error.code), error, `isError ${error.code}`);
  }

  it('MCP: every spec tool × every credential', async () => {
    const cells: Cell[] = [];
    const run = async (credential: Credential) => {
      for (const op of OPERATIONS) {
        if (!applies(op, 'mcp', credential)) continue;
        cells.push({ surface: 'mcp', op: op.name, credential, expected: expected(op, 'mcp', credential, FIXTURES[op.name]!.target), got: await mcpCell(op, credential) });
      }
    };
    for (const credential of CREDENTIALS) if (credential !== 'expired_token') await run(credential);
    // Past the tokens' lifetime on the service's clock: the expired token's session must stop.
    skewMs = 2 * HOUR_MS;
    try {
      await run('expired_token');
    } finally {
      skewMs = 0;
    }
    report(cells, 'mcp');
  });

  // svc is an HTTP client of the REST routes, whose behaviour on each backend the REST cells cover: one backend bounds the time.
  if (backend === backends()[0]) it('CLI: the svc command of every operation × every API-key credential', async () => {
    const cells: Cell[] = [];
    const work: Array<{ op: AnyOperation; credential: Credential }> = [];
    for (const op of OPERATIONS) {
      for (const credential of CREDENTIALS) if (applies(op, 'cli', credential)) work.push({ op, credential });
    }
    // svc help exit-codes: 0 success, 1 an API refusal other than 401/403/409, 4 authentication or access refused.
    const failureExit: Record<string, number> = { not_found: 1, rules_refused: 1 };
    await mapLimit(work, CLI_CONCURRENCY, async ({ op, credential }) => {
      const input = await inputFor(op, credential);
      const [param] = op.path.match(/:[A-Za-z]+/g) ?? [];
      const id = param ? String(input[param.slice(1)]) : undefined;
      const body = Object.fromEntries(Object.entries(input).filter(([k]) => !param || k !== param.slice(1)));
      const key = headersFor(credential, op)['x-api-key'];
      // A script confirms a destructive command up front: no terminal to ask on.
      const args = ['--api-url', t.baseUrl, '--allow-localhost', '--format', 'json', ...(key ? ['--api-key', key] : []), ...op.cli.split(' '), ...(id ? [id] : []), ...(op.destructive ? ['--yes'] : [])];
      // Reads take their query as flags, as a user types them; writes take the JSON body.
      if (op.method !== 'GET') args.push('--input', '-');
      else args.push(...Object.entries(body).flatMap(([field, value]) => queryFlag(field, value)));
      const result = await svc(args, isolatedEnv(), op.method === 'GET' ? undefined : JSON.stringify(body));
      let envelope: { ok?: boolean; data?: unknown; error?: { code?: string } } = {};
      try {
        envelope = JSON.parse(result.stdout);
      } catch {
        // No envelope: the outcome below names the exit code and stderr.
      }
      const outcome = envelope.ok ? successOutcome(op.name, envelope.data) : outcomeOfCode(envelope.error?.code);
      const exit = envelope.ok ? 0 : (failureExit[outcome] ?? 4);
      const got: Observation =
        result.code === exit
          ? settle(credential, op.name, outcome, envelope.data, `exit ${result.code}`)
          : { outcome: `exit ${result.code} ${outcome}`, detail: result.stderr.slice(0, 200) };
      cells.push({ surface: 'cli', op: op.name, credential, expected: expected(op, 'cli', credential, FIXTURES[op.name]!.target), got });
    });
    report(cells, 'cli');
  }, 300_000);

  it('regression: a legacy key on /mcp gets the 401 challenge pointing to the protected-resource metadata', async () => {
    const response = await rawPost(t.mcpUrl, initializeBody(), { 'x-api-key': legacy.get('legacy_key')! });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer scope="mcp:employees:read mcp:employees:write mcp:orders:read mcp:orders:write mcp:inventory:read", resource_metadata="${t.baseUrl}/.well-known/oauth-protected-resource"`);
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: 'api_key_not_user_bound' });
  });

  it("regression: another company's legacy key reads as absent to an admin; a non-admin is refused", async () => {
    const path = `/v4/admin/legacy-keys/${world.ids.legacyKeyId}`;
    const foreign = await client(t.app, keys.get('foreign_admin_key')).get(path);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    const manager = await client(t.app, keys.get('manager_key')).get(path);
    expect(manager.status).toBe(403);
    expect(manager.body.error.code).toBe('admin_only');
    expect((await client(t.app, adminKey()).get(path)).status).toBe(200);
  });

  it('v2 through the gateway: every route of the maps × every credential', async () => {
    const cells: Cell[] = [];
    for (const route of t.core.mappings.routes) {
      const label = `${route.method} ${route.path}`;
      const fixture = V2_FIXTURES[label] ?? {};
      if (route.kind === 'v4' && !V2_FIXTURES[label]) throw new Error(`no v2 fixture for ${label}: add one to test/matrix/fixtures.ts`);
      const op = route.kind === 'v4' ? OPERATIONS.find((o) => o.name === route.operation)! : OPERATIONS[0]!;
      for (const credential of CREDENTIALS) {
        if (!applies(op, 'v2', credential)) continue;
        const params = (await fixture.params?.(world)) ?? {};
        const path = route.path.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? `${name}-1`));
        const body = route.method === 'GET' ? undefined : ((await fixture.body?.(world)) ?? {});
        const response = await t.app.inject({ method: route.method, url: `/v2${path}`, headers: headersFor(credential, op, route), ...(body ? { payload: body } : {}) });
        const answer = response.json() as { error?: { code?: string } };
        const got: Observation =
          response.statusCode < 300
            ? settle(credential, label, 'ok', answer, `${response.statusCode}`)
            : { outcome: outcomeOfCode(answer.error?.code, response.statusCode), detail: `${response.statusCode} ${answer.error?.code}` };
        const want = expectedV2({ scope: route.scope, passthrough: route.kind === 'passthrough' }, credential, fixture.target);
        cells.push({ surface: 'v2', op: label, credential, expected: want, got });
      }
    }
    report(cells, 'v2');
  });
});
