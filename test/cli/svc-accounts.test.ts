import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { isolatedEnv, listen, svc, type SvcResult } from './svc-runner.js';

/*
 * Saved accounts remember their server: the environment (local:<port> included), the URL given
 * at login and --allow-localhost, so later commands need none of them; a server given by URL is
 * labelled by its URL. svc is an HTTP client of the REST routes: one backend suffices.
 */

const ok = (result: SvcResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result;
};

describe('svc accounts against a server on this machine [pglite]', { timeout: 120_000 }, () => {
  let t: TestApp;
  let url: string;
  let port: string;

  beforeAll(async () => {
    t = await startTestApp('pglite');
    url = await listen(t);
    port = new URL(url).port;
  });
  afterAll(async () => t?.close());

  const configOf = (env: NodeJS.ProcessEnv) => JSON.parse(readFileSync(join(env.XDG_CONFIG_HOME!, 'svc', 'config.json'), 'utf8'));
  const whoami = async (env: NodeJS.ProcessEnv, ...args: string[]) => JSON.parse(ok(await svc(['whoami', '--format', 'json', ...args], env)).stdout).data.user.email;

  it('needs --allow-localhost once, at login, and labels the server by its URL, not "(prod)"', async () => {
    const env = isolatedEnv();
    const login = ok(await svc(['auth', 'login', '--api-key', t.demo.apiKeys.admin, '--api-url', url, '--allow-localhost', '--name', 'local-dev'], env));
    expect(login.stdout).toBe(`Logged in to ${url} as ${t.demo.emails.admin} (admin) with ${t.demo.apiKeys.admin.slice(0, 16)}…; account "local-dev" is active\n`);
    expect(configOf(env).accounts['local-dev']).toEqual({ apiKey: t.demo.apiKeys.admin, user: t.demo.emails.admin, apiUrl: url, allowLocalhost: true });

    // No --api-url, no --allow-localhost: the account remembers both.
    expect(await whoami(env)).toBe(t.demo.emails.admin);
    ok(await svc(['teams', 'list', '--company-id', t.demo.companies.acme], env));

    const status = ok(await svc(['auth', 'status'], env));
    expect(status.stdout).toMatch(new RegExp(`^server +${url}$`, 'm'));
    expect(status.stdout).toContain(`* local-dev  ${url}  `);
    expect(status.stdout).not.toContain('prod');
    const resolved = JSON.parse(ok(await svc(['auth', 'status', '--format', 'json'], env)).stdout).data;
    expect(resolved.resolved).toMatchObject({ environment: null, baseUrl: url });
    expect(resolved.accounts).toEqual([expect.objectContaining({ name: 'local-dev', environment: null, baseUrl: url })]);
  });

  it('keeps the spec’s rule: the stored flag covers the account’s own address only; a key without an account needs the flag', async () => {
    const env = isolatedEnv();
    ok(await svc(['auth', 'login', '--api-key', t.demo.apiKeys.admin, '--api-url', url, '--allow-localhost'], env));
    const elsewhere = await svc(['whoami', '--api-url', 'http://127.0.0.1:9'], env);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain('Refusing plain HTTP to http://127.0.0.1:9: pass --allow-localhost');
    const local = await svc(['whoami', '--environment', 'local'], env);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain('Refusing plain HTTP to http://127.0.0.1:3001');
    const fromEnv = await svc(['whoami', '--api-url', url], { ...isolatedEnv(), SVC_API_KEY: t.demo.apiKeys.admin });
    expect(fromEnv.code).toBe(2);
  });

  it('sends a key given alone (--api-key, SVC_API_KEY) to the active account’s server, not to prod', async () => {
    const env = isolatedEnv();
    ok(await svc(['auth', 'login', '--api-key', t.demo.apiKeys.admin, '--api-url', url, '--allow-localhost'], env));
    expect(await whoami(env, '--api-key', t.demo.apiKeys.manager)).toBe(t.demo.emails.manager);
    expect(await whoami({ ...env, SVC_API_KEY: t.demo.apiKeys.manager })).toBe(t.demo.emails.manager);
    const status = JSON.parse(ok(await svc(['auth', 'status', '--format', 'json', '--api-key', t.demo.apiKeys.manager], env)).stdout).data;
    expect(status.resolved).toMatchObject({ source: '--api-key', baseUrl: url });
  });

  it('takes local:<port>, remembers it with the account, and refuses it without --allow-localhost at login', async () => {
    const env = isolatedEnv();
    const refused = await svc(['auth', 'login', '--api-key', t.demo.apiKeys.manager, '--environment', `local:${port}`], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `svc: error: Refusing plain HTTP to ${url}: pass --allow-localhost to talk to a server on this machine (svc auth login … --allow-localhost stores it with the account)\n`,
    );

    const login = ok(await svc(['auth', 'login', '--api-key', t.demo.apiKeys.manager, '--environment', `local:${port}`, '--allow-localhost'], env));
    expect(login.stdout).toContain(`Logged in to ${url} (local:${port}) as ${t.demo.emails.manager}`);
    expect(configOf(env).accounts[t.demo.emails.manager]).toEqual({ apiKey: t.demo.apiKeys.manager, user: t.demo.emails.manager, environment: `local:${port}`, allowLocalhost: true });
    expect(await whoami(env)).toBe(t.demo.emails.manager);
    expect(ok(await svc(['auth', 'status'], env)).stdout).toMatch(new RegExp(`^server +${url} \\(local:${port}\\)$`, 'm'));

    const badPort = await svc(['whoami', '--environment', 'local:99999'], env);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toBe('svc: error: --environment local:99999: the port of local:<port> must be a whole number from 1 to 65535\n');
  });

  it('loads a config file written before accounts remembered --allow-localhost', async () => {
    const env = isolatedEnv();
    mkdirSync(join(env.XDG_CONFIG_HOME!, 'svc'), { recursive: true });
    const file = join(env.XDG_CONFIG_HOME!, 'svc', 'config.json');
    writeFileSync(file, JSON.stringify({ active: 'old', accounts: { old: { apiKey: t.demo.apiKeys.employee, environment: 'prod', apiUrl: url, user: t.demo.emails.employee } } }));
    expect(await whoami(env)).toBe(t.demo.emails.employee);
    const status = ok(await svc(['auth', 'status'], env));
    expect(status.stdout).toContain(`* old  ${url}  `);
    expect(status.stdout).not.toContain('(prod)');
    // The next write keeps what was migrated.
    ok(await svc(['auth', 'login', '--api-key', t.demo.apiKeys.admin, '--api-url', url, '--allow-localhost', '--name', 'new'], env));
    expect(configOf(env).accounts.old).toMatchObject({ apiUrl: url, allowLocalhost: true });
    ok(await svc(['auth', 'switch', 'old'], env));
    expect(await whoami(env)).toBe(t.demo.emails.employee);
  });
});
