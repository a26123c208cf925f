import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TIMEOUT_SECONDS, EXIT } from '../../cli/exit-codes.js';
import { parseTimeout } from '../../cli/http.js';
import { isolatedEnv, silentServer, svc, type SilentServer } from './svc-runner.js';

/*
 * Every svc request has a timeout: against a loopback socket that accepts and never answers,
 * svc ends with a message naming the URL and the timeout, and exit 124 (svc help exit-codes).
 */

const KEY = `svc_sk_zzzzzzzz_${'A'.repeat(43)}`;

describe('svc request timeout', { timeout: 60_000 }, () => {
  let silent: SilentServer;
  let stalling: SilentServer;
  const env = isolatedEnv();

  beforeAll(async () => {
    silent = await silentServer();
    stalling = await silentServer('headers');
  });
  afterAll(async () => {
    await silent?.close();
    await stalling?.close();
  });

  it('ends `svc whoami` against a silent socket with the URL, the timeout and exit 124', async () => {
    const result = await svc(['whoami', '--api-url', silent.url, '--allow-localhost', '--api-key', KEY, '--timeout', '1'], env);
    expect(result.code).toBe(EXIT.timeout);
    expect(result.code).toBe(124);
    expect(result.stderr).toBe(`svc: error: GET ${silent.url}/v4/me: no answer within 1 s (wait longer with --timeout <seconds> or SVC_TIMEOUT) (timeout)\n`);
    expect(result.stdout).toBe('');
    expect(silent.accepted).toBeGreaterThan(0);
  });

  it('takes SVC_TIMEOUT, prints the error envelope with --format json, and covers a body that never ends', async () => {
    const result = await svc(['teams', 'list', '--api-url', stalling.url, '--allow-localhost', '--api-key', KEY, '--format', 'json'], { ...env, SVC_TIMEOUT: '0.5' });
    expect(result.code).toBe(124);
    expect(JSON.parse(result.stdout)).toEqual({
      ok: false,
      error: { code: 'timeout', message: `GET ${stalling.url}/v4/teams: no answer within 0.5 s (wait longer with --timeout <seconds> or SVC_TIMEOUT)` },
      meta: {},
    });
    // --timeout wins over SVC_TIMEOUT.
    const flag = await svc(['whoami', '--api-url', silent.url, '--allow-localhost', '--api-key', KEY, '--timeout', '0.5'], { ...env, SVC_TIMEOUT: '600' });
    expect(flag.code).toBe(124);
    expect(flag.stderr).toContain('no answer within 0.5 s');
  });

  it('times out auth login too, storing nothing', async () => {
    const own = isolatedEnv({ SVC_TIMEOUT: '0.5' });
    const login = await svc(['auth', 'login', '--api-key', KEY, '--api-url', silent.url, '--allow-localhost'], own);
    expect(login.code).toBe(124);
    expect(login.stderr).toContain(`GET ${silent.url}/v4/me: no answer within 0.5 s`);
    expect(existsSync(join(own.XDG_CONFIG_HOME!, 'svc', 'config.json'))).toBe(false);
  });

  it('refuses a timeout that is no positive number, naming where it came from', async () => {
    const flag = await svc(['whoami', '--api-url', silent.url, '--allow-localhost', '--api-key', KEY, '--timeout', 'soon'], env);
    expect(flag.code).toBe(EXIT.usage);
    expect(flag.stderr).toBe('svc: error: --timeout soon: expected a number of seconds greater than 0\n');
    const variable = await svc(['whoami', '--api-url', silent.url, '--allow-localhost', '--api-key', KEY], { ...env, SVC_TIMEOUT: '0' });
    expect(variable.code).toBe(EXIT.usage);
    expect(variable.stderr).toBe('svc: error: SVC_TIMEOUT=0: expected a number of seconds greater than 0\n');
    expect(() => parseTimeout('-1', {})).toThrow('--timeout -1: expected a number of seconds greater than 0');
    expect(parseTimeout(undefined, {})).toBe(DEFAULT_TIMEOUT_SECONDS);
    expect(parseTimeout(undefined, { SVC_TIMEOUT: '' })).toBe(DEFAULT_TIMEOUT_SECONDS);
    expect(parseTimeout('2.5', { SVC_TIMEOUT: '9' })).toBe(2.5);
  });

  it('documents the flag, the variable, the default and the exit code', async () => {
    const help = await svc(['--help'], env);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(`--timeout <seconds> how long to wait for each answer of the API (else SVC_TIMEOUT, else ${DEFAULT_TIMEOUT_SECONDS}); exit 124 when it passes`);
    const codes = await svc(['help', 'exit-codes'], env);
    expect(codes.stdout).toMatch(/^124 {2}timeout: the API did not answer within --timeout seconds \(else SVC_TIMEOUT, default\n {5}30\)/m);
  });
});
