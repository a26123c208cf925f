import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_USER_BOUND_MESSAGE } from '../../src/access/authenticate.js';
import { freePort, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { isolatedEnv, listen, silentServer, svc, type SilentServer } from './svc-runner.js';

/*
 * One prefix for every error svc prints, whoever detects it (commander, the schema, the config,
 * the API, the network, the timeout, the legacy-key check): "svc: error: ", and "svc: warning: "
 * for what does not fail the command.
 */

const UNKNOWN_KEY = `svc_sk_zzzzzzzz_${'A'.repeat(43)}`;

interface ErrorCase {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  code: number;
  /** The first line of stderr after the prefix. */
  message: string | RegExp;
}

describe('svc error messages [pglite]', { timeout: 120_000 }, () => {
  let t: TestApp;
  let url: string;
  let silent: SilentServer;
  let cases: ErrorCase[];

  beforeAll(async () => {
    t = await startTestApp('pglite');
    url = await listen(t);
    silent = await silentServer();
    const at = ['--api-url', url, '--allow-localhost'];
    const admin = [...at, '--api-key', t.demo.apiKeys.admin];
    const brokenConfig = isolatedEnv();
    mkdirSync(join(brokenConfig.XDG_CONFIG_HOME!, 'svc'));
    writeFileSync(join(brokenConfig.XDG_CONFIG_HOME!, 'svc', 'config.json'), '{ not json');
    const readOnly = await keyWith(t, 'admin', ['mcp:teams:read']);
    const acme = ['--company-id', t.demo.companies.acme];
    cases = [
      { name: 'usage: unknown option (commander)', args: ['teams', 'list', '--colour', 'blue', ...admin], code: 2, message: "unknown option '--colour'" },
      { name: 'usage: unknown command (commander)', args: ['teams', 'frobnicate', ...admin], code: 2, message: "unknown command 'frobnicate'" },
      { name: 'usage: missing argument (commander)', args: ['teams', 'get', ...admin], code: 2, message: "missing required argument 'id'" },
      { name: 'usage: not a number', args: ['teams', 'list', '--limit', 'abc', ...admin], code: 2, message: '--limit: expected a whole number, got "abc"' },
      { name: 'usage: refused by the schema', args: ['products', 'pin-code', '--product-id', 'p1', '--pin-code', '12', ...admin], code: 2, message: 'Invalid input to products pin-code: --pin-code: must be 4 to 12 digits' },
      { name: 'usage: JSON-only field as a flag', args: ['orders', 'purchase', '--items', 'x', ...admin], code: 2, message: /^--items takes an object or a list of objects/ },
      { name: 'usage: plain HTTP without --allow-localhost', args: ['whoami', '--api-url', url, '--api-key', t.demo.apiKeys.admin], code: 2, message: /^Refusing plain HTTP to / },
      { name: 'usage: unknown environment', args: ['whoami', '--environment', 'staging'], code: 2, message: /^Unknown environment "staging"/ },
      { name: 'usage: bad timeout', args: ['whoami', '--timeout', 'x', ...admin], code: 2, message: '--timeout x: expected a number of seconds greater than 0' },
      { name: 'usage: bad format', args: ['whoami', '--format', 'yaml', ...admin], code: 2, message: '--format yaml: use one of table, json, text' },
      { name: 'usage: config file', args: ['whoami'], env: brokenConfig, code: 2, message: /^The config file .* is not valid JSON/ },
      { name: 'usage: migrate audit input', args: ['migrate', 'audit', '--scopes', 'a', '--key', 'b'], code: 2, message: /^Give exactly one of --scopes/ },
      { name: 'usage: help topic', args: ['help', 'nothing'], code: 2, message: /^No help topic "nothing"/ },
      { name: 'auth: not logged in', args: ['whoami', ...at], code: 4, message: /^Not logged in/ },
      { name: 'auth: unknown key (401)', args: ['whoami', ...at, '--api-key', UNKNOWN_KEY], code: 4, message: /\(invalid_api_key\)$/ },
      { name: 'auth: missing capability (403)', args: ['teams', 'create', '--name', 'Nope', ...acme, ...at, '--api-key', readOnly], code: 4, message: /mcp:teams:write.*\(missing_capability\)$/ },
      { name: 'auth: legacy v2 key', args: ['whoami', ...at, '--api-key', 'lk_live_legacyv2keyofacme0001'], code: 4, message: `${NOT_USER_BOUND_MESSAGE} (api_key_not_user_bound)` },
      { name: 'HTTP: not found (404)', args: ['teams', 'get', 'team_missing', ...admin], code: 1, message: /\(not_found\)$/ },
      { name: 'HTTP: conflict (409)', args: ['teams', 'create', '--name', 'Engineering', ...acme, ...admin], code: 5, message: /\(team_name_taken\)$/ },
      { name: 'network: nothing listening', args: ['whoami', '--api-url', `http://127.0.0.1:${await freePort()}`, '--allow-localhost', '--api-key', UNKNOWN_KEY], code: 1, message: /^Cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED \(after 4 attempts\) \(unreachable\)$/ },
      { name: 'timeout', args: ['whoami', '--api-url', silent.url, '--allow-localhost', '--api-key', UNKNOWN_KEY, '--timeout', '0.5'], code: 124, message: /^GET http:\/\/127\.0\.0\.1:\d+\/v4\/me: no answer within 0\.5 s/ },
    ];
  });
  afterAll(async () => {
    await silent?.close();
    await t?.close();
  });

  it('starts every error with "svc: error: ", in every format, and never with a bare "error:"', async () => {
    const runs = await Promise.all(
      cases.flatMap((c) => [
        svc(c.args, c.env ?? isolatedEnv()).then((result) => ({ c, result, format: 'table' })),
        ...(c.args.includes('--format') ? [] : [svc([...c.args, '--format', 'json'], c.env ?? isolatedEnv()).then((result) => ({ c, result, format: 'json' }))]),
      ]),
    );
    for (const { c, result, format } of runs) {
      const where = `${c.name} (${format}): ${result.stderr}`;
      expect(result.code, where).toBe(c.code);
      const [first] = result.stderr.split('\n');
      expect(first, where).toMatch(/^svc: error: /);
      const message = first!.slice('svc: error: '.length);
      if (typeof c.message === 'string') expect(message, where).toBe(c.message);
      else expect(message, where).toMatch(c.message);
      expect(result.stderr, where).not.toMatch(/^error:/m);
      for (const line of result.stderr.split('\n').filter((l) => l.startsWith('svc:'))) expect(line, where).toMatch(/^svc: error: /);
    }
  });

  it('prints a warning with "svc: warning: " and still succeeds', async () => {
    const result = await svc(['migrate', 'audit', '--scopes', 'api.teams.getAll', '--ignore', 'api.orders.getAll'], isolatedEnv());
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('svc: warning: --ignore api.orders.getAll: not among the audited scopes\n');
  });
});
