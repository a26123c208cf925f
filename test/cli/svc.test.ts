import { statSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_USER_BOUND_MESSAGE } from '../../src/access/authenticate.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { isolatedEnv, listen, svc, svcBin, type SvcResult } from './svc-runner.js';

/*
 * `svc` against a started server: every command of the operation table, each output format,
 * each exit code, the localhost rule and the accounts; the exit codes and a body on stdin also
 * from the built bin, each command in its own process as a shell runs it.
 */

const ok = (result: SvcResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result;
};
const data = (result: SvcResult) => {
  ok(result);
  const envelope = JSON.parse(result.stdout);
  expect(envelope).toMatchObject({ ok: true, meta: expect.any(Object) });
  return envelope.data;
};

describe.each(backends())('svc against a started server [%s]', { timeout: 120_000 }, (backend) => {
  let t: TestApp;
  let url: string;
  let env: NodeJS.ProcessEnv;
  /** Runs svc with the admin's key against the test server. */
  let admin: (...args: string[]) => Promise<SvcResult>;
  let json: (...args: string[]) => Promise<any>;

  beforeAll(async () => {
    t = await startTestApp(backend);
    url = await listen(t);
    env = isolatedEnv();
    admin = (...args) => svc([...args, '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin], env);
    json = async (...args) => data(await admin(...args, '--format', 'json'));
  });
  afterAll(async () => t?.close());

  it('runs every employees, teams, inventory, devices, products and company command', async () => {
    const acme = ['--company-id', t.demo.companies.acme];
    expect((await json('whoami')).user.email).toBe(t.demo.emails.admin);

    const employees = await admin('employees', 'list', ...acme, '--limit', '2', '--format', 'json');
    expect(data(employees).employees).toHaveLength(2);
    expect(employees.stderr).toMatch(/^Showing 1–2 of \d+ employees; --page 2 for the next page, --all for every one$/m);
    expect((await json('employees', 'get', t.demo.employees.dana)).displayName).toBe('Dana Developer');
    expect((await json('employees', 'countries', ...acme)).countries).toContain('DE');
    const created = await json('employees', 'create', ...acme, '--display-name', 'Cli Person', '--email', 'cli.person@acme.example', '--team-name', 'Engineering');
    expect(created).toMatchObject({ displayName: 'Cli Person', teamName: 'Engineering', invitationQueued: false });
    expect((await json('employees', 'update', created.id, '--job-title', 'QA Lead', '--country', 'de', '--yes')).jobTitle).toBe('QA Lead');
    const inUse = await json('employees', 'register-device', created.id, '--serial-number', 'SN-CLI-INUSE', '--product-type', 'Laptops', '--manufacturer', 'Lenovo', '--model', 'X1');
    expect(inUse.assignment.employeeId).toBe(created.id);
    expect((await json('employees', 'devices', created.id)).devices.map((d: any) => d.serialNumber)).toEqual(['SN-CLI-INUSE']);

    const team = await json('teams', 'create', ...acme, '--name', 'Platform');
    expect((await json('teams', 'get', team.id)).employeeCount).toBe(0);
    expect((await json('teams', 'update', team.id, '--name', 'Platform Core', '--yes')).name).toBe('Platform Core');
    expect((await json('teams', 'list', ...acme, '--query', 'platform')).teams.map((x: any) => x.name)).toEqual(['Platform Core']);

    const stock = await json('inventory', 'search', ...acme, '--in-stock', '--product-type', 'Laptops', '--country', 'DE');
    expect(stock.devices.length).toBeGreaterThan(0);
    expect(stock.devices.every((d: any) => d.inStock && d.productType === 'Laptops')).toBe(true);
    const device = stock.devices[0];
    expect((await json('products', 'get', device.id)).serialNumber).toBe(device.serialNumber);
    expect((await json('products', 'pin-code', '--serial-number', device.serialNumber, '--pin-code', '2468', ...acme, '--yes')).pinCodeSet).toBe(true);
    expect((await json('devices', 'options', '--product-type', 'Laptops', ...acme)).options[0].rank).toBe(1);
    expect((await json('devices', 'suggestions', '--country', 'DE')).suggestions.length).toBeGreaterThan(0);

    const productsFile = join(env.XDG_CONFIG_HOME!, 'products.json');
    writeFileSync(productsFile, JSON.stringify({ products: [{ serialNumber: 'SN-CLI-NEW', productType: 'Mobile', manufacturer: 'Apple', model: 'iPhone 15' }] }));
    const registered = await json('products', 'register', '--input', productsFile, ...acme);
    expect(registered.products[0]).toMatchObject({ serialNumber: 'SN-CLI-NEW', status: 'Available' });

    const address = await json('company', 'addresses', 'create', ...acme, '--alias', 'Lisbon hub', '--address', 'Rua Augusta 1', '--city', 'Lisbon', '--zip-code', '1100-048', '--country', 'PT', '--contact-name', 'Rui', '--contact-email', 'rui@acme.example', '--phone', '+351 21 000 0000');
    expect(address.country).toBe('PT');
    expect((await json('company', 'addresses', 'list', ...acme, '--country', 'PT')).addresses.map((a: any) => a.alias)).toEqual(['Lisbon hub']);
  });

  it('runs every orders command, JSON-only fields through --input (a file or stdin)', async () => {
    const acme = ['--company-id', t.demo.companies.acme];
    const laptop = (await json('inventory', 'search', ...acme, '--in-stock', '--product-type', 'Laptops', '--country', 'DE')).devices[0].id;
    const body = ['--order-type', 'Deployment', '--employee-id', t.demo.employees.dana, '--product-ids', laptop];
    expect(await json('orders', 'validate', ...body)).toMatchObject({ valid: true, violations: [] });
    const order = await json('orders', 'create', ...body);
    expect(order).toMatchObject({ orderType: 'Deployment', status: 'Pending', productIds: [laptop] });
    expect((await json('orders', 'get', order.id)).id).toBe(order.id);
    expect((await json('orders', 'history', order.id)).events[0].type).toBe('created');
    expect(await json('orders', 'tracking', order.id)).toBeTypeOf('object');
    expect(await json('orders', 'sla', order.id)).toBeTypeOf('object');
    const withCharger = await json('orders', 'accessories', order.id, '--product-id', laptop);
    expect(withCharger.subOrders.map((s: any) => s.orderType)).toEqual(['Accessory']);
    const moved = await json('orders', 'event', order.id, '--type', 'status', '--status', 'in progress', '--note', 'packed');
    expect(moved.status).toBe('In Progress');

    const { itemId } = (await json('devices', 'suggestions', '--country', 'DE')).suggestions[0];
    const purchase = { orderType: 'Purchase for Inventory', companyId: t.demo.companies.acme, items: [{ itemId, quantity: 2, country: 'DE' }] };
    const bought = await admin('orders', 'purchase', '--input', '-', '--format', 'json');
    expect(bought.code).toBe(2); // empty stdin is no JSON body
    const viaStdin = data(await svcBin(['orders', 'purchase', '--input', '-', '--format', 'json', '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin], env, JSON.stringify(purchase)));
    expect(viaStdin).toMatchObject({ orderType: 'Purchase for Inventory', items: [expect.objectContaining({ itemId, quantity: 2 })] });

    const all = await json('orders', 'list', ...acme, '--all', '--limit', '1');
    expect(all.orders.length).toBe(all.totalCount);
    expect(all.orders.map((o: any) => o.id)).toEqual(expect.arrayContaining([order.id, viaStdin.id]));
    expect((await json('orders', 'list', ...acme, '--status', 'IN PROGRESS')).orders.map((o: any) => o.id)).toContain(order.id);
  });

  it('prints table (fitted to the width), text and json, and the error envelope in json', async () => {
    const acme = ['--company-id', t.demo.companies.acme];
    const table = ok(await svc(['teams', 'list', ...acme, '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin], { ...env, COLUMNS: '60' }));
    const lines = table.stdout.trimEnd().split('\n');
    // The columns the operation declares come first; companyId, the same on every row here, is hidden.
    expect(lines[0]).toMatch(/^ID +NAME +CREATEDAT/);
    expect(lines.every((line) => !line.includes(t.demo.companies.acme))).toBe(true);
    expect(lines.every((line) => line.length <= 60)).toBe(true);
    expect(table.stdout).not.toContain('\x1b[');
    expect(table.stderr).toMatch(/column\(s\) hidden to fit 60 columns \(.*companyId/);

    const text = ok(await admin('teams', 'list', ...acme, '--format', 'text'));
    const first = text.stdout.split('\n')[0]!.split('\t');
    expect(first[0]).toMatch(/^team_/);
    expect(first).toContain(t.demo.companies.acme);

    const envelope = JSON.parse(ok(await admin('teams', 'list', ...acme, '--format', 'json')).stdout);
    expect(envelope).toMatchObject({ ok: true, data: { teams: expect.any(Array), totalCount: expect.any(Number) }, meta: { requestId: expect.any(String) } });

    const failure = await admin('teams', 'get', 'team_missing', '--format', 'json');
    expect(failure.code).toBe(1);
    expect(JSON.parse(failure.stdout)).toMatchObject({ ok: false, error: { code: 'not_found' }, meta: { requestId: expect.any(String) } });
    const usage = await admin('teams', 'list', '--limit', 'x', '--format', 'json');
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toMatchObject({ ok: false, error: { code: 'usage_error', message: expect.stringContaining('--limit') }, meta: {} });
  });

  it('exits 0, 1, 2, 4 and 5 (409 on a duplicate team name), as svc help exit-codes says', async () => {
    // The built bin: the exit status a shell sees.
    const adminBin = (...args: string[]) => svcBin([...args, '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin], env);
    const help = ok(await svcBin(['help', 'exit-codes'], env));
    for (const code of ['0', '1', '2', '4', '5']) expect(help.stdout).toMatch(new RegExp(`^ +${code} `, 'm'));

    const acme = ['--company-id', t.demo.companies.acme];
    ok(await adminBin('teams', 'create', ...acme, '--name', 'Dup Team'));
    const duplicate = await adminBin('teams', 'create', ...acme, '--name', 'dup team');
    expect(duplicate.code).toBe(5);
    expect(duplicate.stderr).toContain('team_name_taken');

    expect((await adminBin('teams', 'get', 'team_missing')).code).toBe(1);
    const unknownFlag = await adminBin('teams', 'list', '--colour', 'blue');
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain("unknown option '--colour'");
    expect((await adminBin('teams', 'frobnicate')).code).toBe(2);

    const noKey = await svcBin(['teams', 'list', '--api-url', url, '--allow-localhost'], env);
    expect(noKey.code).toBe(4);
    expect(noKey.stderr).toContain('Not logged in');
    const revoked = await svcBin(['teams', 'list', '--api-url', url, '--allow-localhost', '--api-key', `svc_sk_zzzzzzzz_${'A'.repeat(43)}`], env);
    expect(revoked.code).toBe(4);
    expect(revoked.stderr).toContain('invalid_api_key');
    const readOnly = await keyWith(t, 'admin', ['mcp:teams:read']);
    const forbidden = await svcBin(['teams', 'create', ...acme, '--name', 'Nope', '--api-url', url, '--allow-localhost', '--api-key', readOnly], env);
    expect(forbidden.code).toBe(4);
    expect(forbidden.stderr).toContain('mcp:teams:write');
  });

  it('refuses plain HTTP without --allow-localhost, and to any host but 127.0.0.1', async () => {
    const refused = await svc(['teams', 'list', '--api-url', url, '--api-key', t.demo.apiKeys.admin], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`Refusing plain HTTP to ${url}: pass --allow-localhost`);
    const local = await svc(['whoami', '--environment', 'local', '--api-key', t.demo.apiKeys.admin], env);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain('Refusing plain HTTP to http://127.0.0.1:3001');
    const remote = await svc(['whoami', '--api-url', 'http://example.com', '--allow-localhost', '--api-key', t.demo.apiKeys.admin], env);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('API keys are sent only over HTTPS');
  });

  it('refuses a legacy v2 key at login, storing nothing, and on any command', async () => {
    const legacy = 'lk_live_legacyv2keyofacme0001';
    const own = isolatedEnv();
    const login = await svc(['auth', 'login', '--api-key', legacy, '--api-url', url, '--allow-localhost'], own);
    expect(login.code).toBe(4);
    expect(login.stderr).toContain(NOT_USER_BOUND_MESSAGE);
    expect(() => statSync(join(own.XDG_CONFIG_HOME!, 'svc', 'config.json'))).toThrow();
    const call = await svc(['whoami', '--api-url', url, '--allow-localhost', '--format', 'json'], { ...own, SVC_API_KEY: legacy });
    expect(call.code).toBe(4);
    expect(JSON.parse(call.stdout)).toMatchObject({ ok: false, error: { code: 'api_key_not_user_bound', message: NOT_USER_BOUND_MESSAGE } });
  });

  it('adds, switches and logs out named accounts; SVC_API_KEY overrides the active one and --api-key both', async () => {
    const own = isolatedEnv();
    const at = ['--api-url', url, '--allow-localhost'];
    const run = (args: string[], extra: NodeJS.ProcessEnv = {}) => svc([...args, ...at], { ...own, ...extra });
    const { admin: adminKey, manager: managerKey } = t.demo.apiKeys;

    const first = ok(await run(['auth', 'login', '--api-key', adminKey, '--name', 'ops-admin']));
    expect(first.stdout).toContain(`as ${t.demo.emails.admin} (admin)`);
    ok(await svc(['auth', 'login', '--name', 'acme-manager', ...at], own, `${managerKey}\n`)); // the key from stdin
    const file = join(own.XDG_CONFIG_HOME!, 'svc', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ active: 'acme-manager', accounts: { 'ops-admin': { apiKey: adminKey }, 'acme-manager': { apiKey: managerKey } } });

    const status = ok(await run(['auth', 'status']));
    expect(status.stdout).toContain(t.demo.emails.manager);
    expect(status.stdout).toMatch(/^\* acme-manager /m);
    for (const output of [first.stdout, first.stderr, status.stdout, status.stderr]) {
      expect(output).not.toContain(adminKey);
      expect(output).not.toContain(managerKey);
    }
    const whoami = async (extra: NodeJS.ProcessEnv = {}, args: string[] = []) => data(await run(['whoami', '--format', 'json', ...args], extra)).user.email;
    expect(await whoami()).toBe(t.demo.emails.manager);

    ok(await run(['auth', 'switch', 'ops-admin']));
    expect(await whoami()).toBe(t.demo.emails.admin);
    expect(await whoami({ SVC_API_KEY: managerKey })).toBe(t.demo.emails.manager);
    expect(await whoami({ SVC_API_KEY: managerKey }, ['--api-key', adminKey])).toBe(t.demo.emails.admin);
    const resolved = data(await run(['auth', 'status', '--format', 'json'], { SVC_API_KEY: managerKey })).resolved;
    // A server given by --api-url is no named environment: it is labelled by its URL.
    expect(resolved).toMatchObject({ source: 'SVC_API_KEY', environment: null, baseUrl: url });

    expect((await run(['auth', 'switch', 'nobody'])).code).toBe(2);
    ok(await run(['auth', 'logout', '--name', 'ops-admin']));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ accounts: { 'acme-manager': expect.any(Object) } });
    const loggedOut = await run(['whoami']);
    expect(loggedOut.code).toBe(4);
    ok(await run(['auth', 'logout', '--name', 'acme-manager']));
    expect((await run(['auth', 'logout', '--name', 'acme-manager'])).code).toBe(2);
  });
});
