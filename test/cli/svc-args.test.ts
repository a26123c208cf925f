import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildInput, describeInput, kebabCase } from '../../cli/args.js';
import { activeAccount, checkAddress, describeTarget, parseEnvironment, readConfig, resolveCredential, resolveTarget, writeConfig, type StoredConfig } from '../../cli/config.js';
import { CliError, EXIT } from '../../cli/exit-codes.js';
import type { ApiRequest } from '../../cli/http.js';
import type { CliIo } from '../../cli/io.js';
import { registerOperationCommands } from '../../cli/operations.js';
import { Session, type GlobalOptions } from '../../cli/session.js';
import { OPERATIONS } from '../../src/app/operation-table.js';
import { pathParams } from '../../src/kit/path-template.js';

/*
 * Argument parsing apart from behaviour, as gh tests it: argv → request, without a server. The
 * session's call is the one seam: it records the request the command would send.
 */

const op = (name: string) => {
  const found = OPERATIONS.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no operation ${name}`);
  return found;
};

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });

/** No terminal, no environment and no network: what a command would send is recorded, not sent. */
const parsingIo = (): CliIo => ({
  stdout: discard(),
  stderr: discard(),
  env: {},
  fetch: () => Promise.reject(new Error('argument parsing sends no request')),
});

class RecordingSession extends Session {
  requests: ApiRequest[] = [];
  override async call(request: ApiRequest) {
    this.requests.push(request);
    return { ok: true as const, data: {}, meta: {} };
  }
}

/** Parses a command line the way `svc` does and returns the request it would send. */
async function requestFor(...argv: string[]): Promise<ApiRequest> {
  const session = new RecordingSession({ format: 'json' }, parsingIo(), '/nonexistent/svc-config.json');
  const program = new Command('svc').exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  registerOperationCommands(program, OPERATIONS, () => session);
  await program.parseAsync(argv, { from: 'user' });
  expect(session.requests).toHaveLength(1);
  return session.requests[0]!;
}

async function refusal(...argv: string[]): Promise<CliError> {
  const error = await requestFor(...argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CliError);
  return error as CliError;
}

describe('svc argument parsing', () => {
  it('derives one command per operation, the issue’s nouns and verbs among them', () => {
    const commands = OPERATIONS.map((o) => o.cli);
    expect(new Set(commands).size).toBe(commands.length);
    expect(commands).toEqual(
      expect.arrayContaining([
        ...['list', 'get', 'create', 'update', 'devices', 'countries'].map((a) => `employees ${a}`),
        ...['list', 'get', 'create', 'history', 'tracking', 'sla', 'validate', 'accessories', 'purchase'].map((a) => `orders ${a}`),
        ...['list', 'get', 'create', 'update'].map((a) => `teams ${a}`),
        'inventory search',
        'devices options',
        'devices suggestions',
        'products get',
        'products pin-code',
        'company addresses list',
        'company addresses create',
        'whoami',
      ]),
    );
  });

  it('turns camelCase fields into kebab-case flags', () => {
    expect(kebabCase('serialNumber')).toBe('serial-number');
    expect(kebabCase('sendInvitation')).toBe('send-invitation');
    const flags = describeInput(op('add_product_pin_code').input);
    expect(flags.map((f) => f.flag)).toEqual(['product-id', 'serial-number', 'pin-code', 'company-id']);
  });

  it('describes kinds, requirement and choices from the zod schema', () => {
    const employee = describeInput(op('create_employee').input);
    const byField = Object.fromEntries(employee.map((f) => [f.field, f]));
    expect(byField.displayName).toMatchObject({ kind: 'string', required: true });
    expect(byField.sendInvitation).toMatchObject({ kind: 'boolean', required: false });
    // addressTwo and phone cannot be set at creation: no flag at all.
    expect(byField.addressTwo).toBeUndefined();
    expect(byField.phone).toBeUndefined();

    const order = Object.fromEntries(describeInput(op('create_order').input).map((f) => [f.field, f]));
    expect(order.orderType).toMatchObject({ kind: 'string', required: true, choices: ['Deployment', 'Offboarding', 'Collection', 'Maintenance', 'Swap from Inventory'] });
    expect(order.productIds).toMatchObject({ kind: 'list', required: true });
    for (const field of ['dispositions', 'legalHold', 'pickupWindow']) expect(order[field]?.kind).toBe('json');

    // A discriminated union: orderType in every variant, employeeId only in one.
    const purchase = Object.fromEntries(describeInput(op('create_purchase_order').input).map((f) => [f.field, f]));
    expect(purchase.orderType).toMatchObject({ required: true, choices: ['Purchase for Employee', 'Purchase for Inventory'] });
    expect(purchase.employeeId).toMatchObject({ required: false });
    expect(purchase.items?.kind).toBe('json');

    const list = Object.fromEntries(describeInput(op('list_orders').input).map((f) => [f.field, f]));
    expect(list.limit).toMatchObject({ kind: 'number', integer: true });
    expect(list.topLevel).toMatchObject({ kind: 'boolean', choices: [] });
    expect(describeInput(op('get_order').input, pathParams(op('get_order').path))).toEqual([]);
  });

  it('lists choices only for enumerations: none for free text that may also be "" or null, none for booleans', () => {
    const employee = Object.fromEntries(describeInput(op('create_employee').input).map((f) => [f.field, f]));
    for (const field of ['personalEmail', 'jobTitle', 'country', 'teamName']) expect(employee[field]?.choices).toEqual([]);
    const search = Object.fromEntries(describeInput(op('search_inventory').input).map((f) => [f.field, f]));
    expect(search.status?.choices).toEqual(['Available', 'Assigned', 'In Transit', 'In Repair', 'Retired']);
    expect(search.inStock?.choices).toEqual([]);
    // record_order_event: `status` is free text in one variant (an order status, any case), so no list; `type` is every variant's constant.
    const event = Object.fromEntries(describeInput(op('record_order_event').input, ['id']).map((f) => [f.field, f]));
    expect(event.status?.choices).toEqual([]);
    expect(event.type).toMatchObject({ required: true, choices: ['status', 'delay', 'delay_resolved', 'shipment', 'device'] });
  });

  it('prints choices in help when there are some, and never an empty list', () => {
    const program = new Command('svc');
    registerOperationCommands(program, OPERATIONS, () => new Session({}, parsingIo(), '/nonexistent/svc-config.json'));
    const commandOf = (words: string) => words.split(' ').reduce<Command>((c, word) => c.commands.find((s) => s.name() === word)!, program);
    const help = (words: string) => commandOf(words).helpInformation();
    for (const o of OPERATIONS) {
      const text = help(o.cli).replace(/\s+/g, ' ');
      expect(text, o.cli).not.toContain('(one of: )');
      // Every choice is named once, in the flag's description or in "(one of: …)" after it.
      for (const flag of describeInput(o.input, pathParams(o.path)).filter((f) => f.choices.length > 0)) {
        const line = text.slice(text.indexOf(`--${flag.flag} `)).split(/ --/)[0]!;
        for (const choice of flag.choices) expect(line, `${o.cli} --${flag.flag}`).toContain(choice);
      }
    }
    expect(help('orders event').replace(/\s+/g, ' ')).toContain('--type <value> (one of: status, delay, delay_resolved, shipment, device) [required]');
    expect(help('inventory search').replace(/\s+/g, ' ')).toContain('--status <value> Device status: Available, Assigned, In Transit, In Repair, Retired --all');
    expect(help('employees create')).toMatch(/--personal-email <value> +Private email address; null or "" clears it\n/);
  });

  it('refuses a number flag that is no number, naming the flag and the rule', async () => {
    for (const [value, rule] of [['abc', 'a whole number'], ['2.5', 'a whole number'], ['', 'a whole number']] as const) {
      const error = await refusal('teams', 'list', '--limit', value);
      expect(error.exitCode).toBe(EXIT.usage);
      expect(error.message).toBe(`--limit: expected ${rule}, got "${value}"`);
    }
  });

  it('sends flags as the JSON body of a write, typed, with the path parameter from the argument', async () => {
    expect(await requestFor('products', 'pin-code', '--serial-number', 'SN-1', '--pin-code', '1234', '--yes')).toEqual({
      method: 'POST',
      path: '/v4/products/pin-code',
      body: { serialNumber: 'SN-1', pinCode: '1234' },
    });
    expect(await requestFor('teams', 'update', 'team 1', '--name', 'Platform', '--yes')).toEqual({
      method: 'PATCH',
      path: '/v4/teams/team%201',
      body: { name: 'Platform' },
    });
    expect(await requestFor('employees', 'create', '--display-name', 'Ann', '--email', 'ann@acme.example', '--send-invitation')).toMatchObject({
      body: { displayName: 'Ann', email: 'ann@acme.example', sendInvitation: true },
    });
    expect(
      await requestFor('orders', 'create', '--order-type', 'Deployment', '--employee-id', 'emp_1', '--product-ids', 'dev_1,dev_2', '--product-ids', 'dev_3'),
    ).toMatchObject({ body: { orderType: 'Deployment', employeeId: 'emp_1', productIds: ['dev_1', 'dev_2', 'dev_3'] } });
  });

  it('sends a read’s flags as the query string', async () => {
    expect(await requestFor('orders', 'list', '--status', 'shipped', '--limit', '5', '--page', '2', '--top-level')).toEqual({
      method: 'GET',
      path: '/v4/orders',
      query: { status: 'shipped', limit: '5', page: '2', topLevel: 'true' },
    });
    expect(await requestFor('inventory', 'search', '--no-in-stock')).toMatchObject({ query: { inStock: 'false' } });
    expect(await requestFor('whoami')).toEqual({ method: 'GET', path: '/v4/me', query: {} });
  });

  it('refuses object fields as flags, naming --input', async () => {
    const error = await refusal('orders', 'create', '--order-type', 'Collection', '--employee-id', 'e', '--product-ids', 'd', '--legal-hold', '{"caseId":"1"}');
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toBe('--legal-hold takes an object or a list of objects: give it in the JSON body with --input <file> or --input -');
    expect(() => buildInput(describeInput(op('create_purchase_order').input), { items: '[]' })).toThrow(/--items .*--input/);
  });

  it('checks the input with the operation’s schema before any request, naming the flag', async () => {
    const pin = await refusal('products', 'pin-code', '--product-id', 'p1', '--pin-code', '12');
    expect(pin.exitCode).toBe(EXIT.usage);
    expect(pin.message).toContain('--pin-code: must be 4 to 12 digits');
    const both = await refusal('products', 'pin-code', '--product-id', 'p1', '--serial-number', 's', '--pin-code', '1234');
    expect(both.message).toContain('give exactly one of productId or serialNumber');
    const limit = await refusal('teams', 'list', '--limit', '0');
    expect(limit.message).toBe('Invalid input to teams list: --limit: Too small: expected number to be >=1');
  });

  it('needs --yes for a destructive command when stdin is no terminal, before any request', async () => {
    const destructive = OPERATIONS.filter((o) => o.destructive).map((o) => o.cli);
    expect(destructive.sort()).toEqual(['employees update', 'legacy-keys disable', 'products pin-code', 'teams update']);
    const unconfirmed = await refusal('teams', 'update', 'team 1', '--name', 'Platform');
    expect(unconfirmed.exitCode).toBe(EXIT.usage);
    expect(unconfirmed.message).toBe('teams update changes or removes data: confirm it with --yes (svc asks only when stdin is a terminal)');
    // The input is checked first: a bad flag is named even without --yes.
    expect((await refusal('legacy-keys', 'disable', 'lk_1', '--force')).message).toBe(
      'Invalid input to legacy-keys disable: --reason: required when force is true: say why the key is disabled before its cutover is done',
    );
    expect(await requestFor('legacy-keys', 'disable', 'lk_1', '--force', '--reason', 'integration gone', '-y')).toEqual({
      method: 'POST',
      path: '/v4/admin/legacy-keys/lk_1/disable',
      body: { force: true, reason: 'integration gone' },
    });
  });

  it('merges the --input body under the flags: a flag wins over the same field', () => {
    const flags = describeInput(op('create_order').input);
    const document = { orderType: 'Collection', employeeId: 'from-file', productIds: ['d1'], pickupWindow: { start: 'a', end: 'b' } };
    expect(buildInput(flags, { employeeId: 'from-flag' }, document)).toEqual({ ...document, employeeId: 'from-flag' });
  });

  it('resolves the credential from --api-key, then SVC_API_KEY, then the active account', () => {
    const config: StoredConfig = { active: 'work', accounts: { work: { apiKey: 'svc_sk_account', environment: 'next' } } };
    expect(resolveCredential({ apiKey: 'svc_sk_flag' }, { SVC_API_KEY: 'svc_sk_env' }, config)).toEqual({ apiKey: 'svc_sk_flag', source: 'flag' });
    expect(resolveCredential({}, { SVC_API_KEY: 'svc_sk_env' }, config)).toEqual({ apiKey: 'svc_sk_env', source: 'env' });
    expect(resolveCredential({}, {}, config)).toEqual({ apiKey: 'svc_sk_account', source: 'account', account: 'work' });
    expect(resolveCredential({}, {}, { accounts: config.accounts })).toBeUndefined();
  });

  it('resolves the address: --api-url, else the account’s, else the environment’s; plain HTTP only to 127.0.0.1 with --allow-localhost', () => {
    const config: StoredConfig = { active: 'work', accounts: { work: { apiKey: 'k', environment: 'next' } }, devApiUrl: 'https://me.dev.example' };
    const account = activeAccount(config);
    expect(resolveTarget({}, undefined, config)).toEqual({ environment: 'prod', baseUrl: 'https://api.devicelifecycle.example' });
    expect(resolveTarget({ environment: 'io' }, undefined, config)).toEqual({ environment: 'io', baseUrl: 'https://api.devicelifecycle.example' });
    expect(resolveTarget({}, account, config)).toEqual({ environment: 'next', baseUrl: 'https://api.next.devicelifecycle.example' });
    expect(resolveTarget({ environment: 'dev' }, account, config)).toEqual({ environment: 'dev', baseUrl: 'https://me.dev.example' });
    expect(resolveTarget({ environment: 'local', allowLocalhost: true }, account, config).baseUrl).toBe('http://127.0.0.1:3001');
    expect(() => resolveTarget({ environment: 'local' }, account, config)).toThrow(/pass --allow-localhost/);
    expect(() => resolveTarget({ environment: 'staging' }, account, config)).toThrow(/Unknown environment "staging"/);
    expect(() => checkAddress('http://api.example.com', true)).toThrow(/API keys are sent only over HTTPS/);
    expect(checkAddress('https://api.example.com/base/', false)).toBe('https://api.example.com');
  });

  it('labels a server given by URL by the URL, not by the environment it overrides', () => {
    const config: StoredConfig = { accounts: {} };
    expect(resolveTarget({ apiUrl: 'https://api.example.com/' }, undefined, config)).toEqual({ environment: null, baseUrl: 'https://api.example.com' });
    expect(resolveTarget({ environment: 'next', apiUrl: 'https://api.example.com' }, undefined, config).environment).toBeNull();
    // The environment's own address spelled as a URL is still that environment.
    expect(resolveTarget({ apiUrl: 'https://api.devicelifecycle.example' }, undefined, config).environment).toBe('prod');
    expect(describeTarget({ environment: null, baseUrl: 'http://127.0.0.1:4201' })).toBe('http://127.0.0.1:4201');
    expect(describeTarget({ environment: 'next', baseUrl: 'https://api.next.devicelifecycle.example' })).toBe('https://api.next.devicelifecycle.example (next)');
  });

  it('takes local:<port> for a local server on another port, and names the rule for a bad port', () => {
    const config: StoredConfig = { accounts: {} };
    expect(parseEnvironment('local:4201')).toBe('local:4201');
    expect(parseEnvironment('local:04201')).toBe('local:4201');
    expect(resolveTarget({ environment: 'local:4201', allowLocalhost: true }, undefined, config)).toEqual({ environment: 'local:4201', baseUrl: 'http://127.0.0.1:4201' });
    expect(() => resolveTarget({ environment: 'local:4201' }, undefined, config)).toThrow(/Refusing plain HTTP to http:\/\/127.0.0.1:4201: pass --allow-localhost/);
    for (const bad of ['local:', 'local:0', 'local:65536', 'local:http']) {
      expect(() => parseEnvironment(bad)).toThrow(`--environment ${bad}: the port of local:<port> must be a whole number from 1 to 65535`);
    }
    expect(() => parseEnvironment('next:4201')).toThrow(/Unknown environment "next:4201": use one of prod, io, next, local, dev, or local:<port>/);
  });

  it('counts --allow-localhost stored with an account, for that account’s own address only', () => {
    const config: StoredConfig = {
      active: 'mine',
      accounts: {
        mine: { apiKey: 'k', environment: 'local:4201', allowLocalhost: true },
        custom: { apiKey: 'k', apiUrl: 'http://127.0.0.1:4300', allowLocalhost: true },
      },
    };
    const mine = config.accounts.mine;
    expect(resolveTarget({}, mine, config)).toEqual({ environment: 'local:4201', baseUrl: 'http://127.0.0.1:4201' });
    expect(resolveTarget({ environment: 'local:4201' }, mine, config).baseUrl).toBe('http://127.0.0.1:4201');
    expect(() => resolveTarget({ environment: 'local' }, mine, config)).toThrow(/pass --allow-localhost/);
    expect(() => resolveTarget({ apiUrl: 'http://127.0.0.1:4999' }, mine, config)).toThrow(/pass --allow-localhost/);
    expect(resolveTarget({}, config.accounts.custom, config)).toEqual({ environment: null, baseUrl: 'http://127.0.0.1:4300' });
    // No account (a first login): the address needs the flag.
    expect(() => resolveTarget({ environment: 'local:4201' }, undefined, config)).toThrow(/pass --allow-localhost/);
  });

  it('keeps the active account’s server, and its stored --allow-localhost, for a key from --api-key or SVC_API_KEY', () => {
    const env = { XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'svc-server-of-')) };
    const io = { stdout: process.stdout, stderr: process.stderr, env, fetch: globalThis.fetch };
    const file = join(env.XDG_CONFIG_HOME, 'svc', 'config.json');
    writeConfig({ active: 'local', accounts: { local: { apiKey: 'svc_sk_account', apiUrl: 'http://127.0.0.1:4201', allowLocalhost: true } } }, file);
    const keyOnly: [GlobalOptions, NodeJS.ProcessEnv][] = [
      [{ apiKey: 'svc_sk_flag' }, env],
      [{}, { ...env, SVC_API_KEY: 'svc_sk_env' }],
    ];
    for (const [options, environment] of keyOnly) {
      const session = new Session(options, { ...io, env: environment }, file);
      expect(session.credential()?.source).not.toBe('account');
      expect(session.target()).toEqual({ environment: null, baseUrl: 'http://127.0.0.1:4201' });
    }
    // Naming another server still overrides the account's, and needs its own flag.
    expect(() => new Session({ apiKey: 'svc_sk_flag', environment: 'local' }, io, file).target()).toThrow(/pass --allow-localhost/);
    expect(new Session({ apiKey: 'svc_sk_flag', environment: 'next' }, io, file).target()).toEqual({ environment: 'next', baseUrl: 'https://api.next.devicelifecycle.example' });
  });

  it('loads config files written before accounts remembered --allow-localhost', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-old-config-'));
    const file = join(dir, 'config.json');
    // What svc wrote before: every account with an environment, --api-url kept, no allowLocalhost.
    writeFileSync(
      file,
      JSON.stringify({
        active: 'loopback',
        accounts: {
          loopback: { apiKey: 'k1', environment: 'prod', apiUrl: 'http://127.0.0.1:4201', user: 'a@example.com' },
          local: { apiKey: 'k2', environment: 'local' },
          staging: { apiKey: 'k3', environment: 'next' },
        },
      }),
    );
    const config = readConfig(file);
    // Login took a plain-HTTP loopback address only with --allow-localhost, so those accounts had it.
    expect(config.accounts.loopback).toMatchObject({ allowLocalhost: true });
    expect(config.accounts.local).toMatchObject({ allowLocalhost: true });
    expect(config.accounts.staging?.allowLocalhost).toBeUndefined();
    expect(resolveTarget({}, activeAccount(config), config)).toEqual({ environment: null, baseUrl: 'http://127.0.0.1:4201' });
    expect(readConfig(join(dir, 'missing.json'))).toEqual({ accounts: {} });
  });
});
