import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ENV_NAMES } from '../../src/kit/config.js';
import { adminQuery, backends, freePort, TEST_SECRET_KEY } from '../helpers/harness.js';
import { runCommandSync, type ServerProcess } from '../helpers/server-process.js';
import { deployFile, execStartOf, readEnvFile, readUnit, startUnit, unitValue, type Unit } from '../helpers/deployment.js';
import { redisUrl, uniquePrefix } from '../shared-state/redis-support.js';

/*
 * deploy/systemd as systemd would read it, without systemd: the units verified by systemd-analyze,
 * their settings checked against their environment files, and each ExecStart run natively with its
 * environment file, serving /readyz.
 */

const run = promisify(execFile);
// What a production instance must be told (docs/operations.md, "Several instances"); the shutdown timings explicitly, as the unit's stop timeout depends on them.
const SHARED_REQUIRED = ['HOST', 'DATABASE_URL', 'SVC_SECRET_KEY', 'PUBLIC_BASE_URL', 'TRUST_PROXY', 'SHUTDOWN_DRAIN_MS', 'SHUTDOWN_GRACE_MS'];
const UNITS = [
  { unit: 'systemd/svc-core@.service', env: 'systemd/core.env', required: [...SHARED_REQUIRED, 'REDIS_URL'] },
  { unit: 'systemd/svc-gateway@.service', env: 'systemd/gateway.env', required: [...SHARED_REQUIRED, 'V4_UPSTREAM'] },
];
const package_ = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
// Every variable the service reads: its configuration's, and the gateway's --upstream.
const KNOWN_VARIABLES = new Set([...Object.values(ENV_NAMES), 'V4_UPSTREAM']);

describe.each(UNITS)('$unit with $env', ({ unit: unitPath, env: envPath, required }) => {
  const unit: Unit = readUnit(deployFile(unitPath));
  const env = readEnvFile(deployFile(envPath));

  it('reads its environment file, which sets only variables the service reads', () => {
    expect(basename(unitValue(unit, 'Service', 'EnvironmentFile')!)).toBe(basename(envPath));
    expect(Object.keys(env).filter((name) => !KNOWN_VARIABLES.has(name))).toEqual([]);
  });

  it('sets every variable a production instance needs', () => {
    expect(required.filter((name) => !env[name])).toEqual([]);
  });

  it('stops by SIGTERM, and gives the drain and the grace their time before systemd kills', () => {
    expect(unitValue(unit, 'Service', 'KillSignal')).toBe('SIGTERM');
    const stopSeconds = Number(unitValue(unit, 'Service', 'TimeoutStopSec'));
    expect(stopSeconds * 1000).toBeGreaterThan(Number(env.SHUTDOWN_DRAIN_MS) + Number(env.SHUTDOWN_GRACE_MS));
  });

  it('starts svc-server, as package.json names it, with the instance as its port', () => {
    expect(execStartOf(unit, '3001').slice(1)).toEqual([expect.stringMatching(new RegExp(`/${package_.bin['svc-server']!.replaceAll('.', '\\.')}$`)), expect.any(String), '--port', '3001']);
  });

  it('keeps Node’s compile cache in its own cache directory, across restarts', () => {
    const cacheDirectory = unitValue(unit, 'Service', 'CacheDirectory');
    expect(cacheDirectory).toMatch(/%i$/);
    expect(unit.get('Service')?.get('Environment')).toContain(`NODE_COMPILE_CACHE=%C/${cacheDirectory}`);
  });

  describe.skipIf(!inject('systemdAnalyze'))('under systemd-analyze', () => {
    it('verifies without a warning', async () => {
      const { stdout, stderr } = await run('systemd-analyze', ['verify', deployFile(unitPath)]);
      expect(`${stdout}${stderr}`).toBe('');
    });

    it('is sandboxed: exposure 2.0 or less ("OK") on systemd\'s scale', async () => {
      const result = await run('systemd-analyze', ['security', '--offline=true', '--threshold=20', '--no-pager', deployFile(unitPath)]).catch((error: Error & { stdout: string }) => error);
      expect(result.stdout).toMatch(/Overall exposure level for .*: (0|1|2)\.\d OK/);
      expect(result).not.toBeInstanceOf(Error);
    });
  });
});

describe.each(backends().filter((b) => b === 'postgres' && redisUrl()))('the units\' commands run with their environment files [%s]', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const core = readUnit(deployFile('systemd/svc-core@.service'));
  const gateway = readUnit(deployFile('systemd/svc-gateway@.service'));
  // What differs on this machine from the shipped placeholders: the database, Redis and the secret key.
  let machine: Record<string, string>;
  const started: ServerProcess[] = [];

  beforeAll(async () => {
    await adminQuery(`CREATE SCHEMA ${schema}`);
    const databaseUrl = new URL(inject('postgresUrl'));
    databaseUrl.searchParams.set('options', `-c search_path=${schema}`);
    machine = { DATABASE_URL: databaseUrl.toString(), REDIS_URL: redisUrl(), REDIS_KEY_PREFIX: uniquePrefix(), SVC_SECRET_KEY: TEST_SECRET_KEY };
    const migrated = runCommandSync(['migrate'], machine);
    expect(migrated.status, migrated.stderr).toBe(0);
  });

  afterAll(async () => {
    for (const unitProcess of started) await unitProcess.kill9();
    await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
  });

  it('refuses to start a core with the shipped placeholder secret key, naming it', async () => {
    const { SVC_SECRET_KEY: _placeholder, ...machineButKey } = machine;
    const refused = startUnit(core, await freePort(), { ...readEnvFile(deployFile('systemd/core.env')), ...machineButKey });
    started.push(refused);
    expect(await refused.exited).not.toBe(0);
    expect(refused.output()).toContain('SVC_SECRET_KEY');
  });

  // A gateway exits 1 while no core has migrated the database (test/gateway/apart.test.ts): after a reboot or an
  // upgrade it is restarted until one has, never left stopped by systemd's default start limit.
  it('restarts a gateway that failed to start for as long as it takes', () => {
    expect(unitValue(gateway, 'Service', 'Restart')).toBe('on-failure');
    expect(unitValue(gateway, 'Unit', 'StartLimitIntervalSec')).toBe('0');
  });

  it('serves /readyz from a core and from a gateway in front of it, and stops the core with exit 0 on SIGTERM', async () => {
    const corePort = await freePort();
    const coreProcess = startUnit(core, corePort, { ...readEnvFile(deployFile('systemd/core.env')), ...machine });
    started.push(coreProcess);
    await coreProcess.ready();
    const readiness = (await (await fetch(`${coreProcess.url}/readyz`)).json()) as { status: string; checks: Record<string, string> };
    expect(readiness).toMatchObject({ status: 'ready', checks: { database: 'up', redis: 'up' } });

    const { REDIS_URL: _redis, REDIS_KEY_PREFIX: _prefix, ...gatewayMachine } = machine;
    const gatewayProcess = startUnit(gateway, await freePort(), { ...readEnvFile(deployFile('systemd/gateway.env')), ...gatewayMachine, V4_UPSTREAM: coreProcess.url });
    started.push(gatewayProcess);
    await gatewayProcess.ready();
    // Proxied to the core: the gateway reaches it.
    expect((await fetch(`${gatewayProcess.url}/v4/me`)).status).toBe(401);

    expect(await gatewayProcess.stop()).toBe(0);
    expect(await coreProcess.stop()).toBe(0);
  }, 90_000);
});
