import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import type { TestProject } from 'vitest/node';
import { Redis } from 'ioredis';
import pg from 'pg';
import { emptyClusterTemplate } from '../../src/store/pglite-template.js';
import { makePostgresTemplate, seededPglite, type PostgresTemplate } from './seeded-template.js';

export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const DEFAULT_TEST_REDIS_URL = 'redis://127.0.0.1:6379';
/** Debian's chromium (never a downloaded browser); CHROMIUM_PATH points elsewhere. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/** What a suite needs from the machine, and why it is missing when it is. */
interface Component {
  name: string;
  suites: string;
  install: string;
  probe(): Promise<string | undefined>;
}

async function probePostgres(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `unreachable at ${url}: ${String(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function probeRedis(url: string): Promise<string | undefined> {
  // Outage tests start a Redis of their own, so the server binary must be there too.
  if (spawnSync('redis-server', ['--version']).error) return 'no redis-server on PATH';
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return `unreachable at ${url}: ${String(error)}`;
  } finally {
    redis.disconnect();
  }
}

/** Programs on PATH, run once with `args`: why not, or undefined when every one runs. */
function probePrograms(programs: string[], args: string[]): Promise<string | undefined> {
  const absent = programs.filter((program) => spawnSync(program, args).status !== 0);
  return Promise.resolve(absent.length > 0 ? `not on PATH: ${absent.join(', ')}` : undefined);
}

function probeChromium(path: string): Promise<string | undefined> {
  try {
    accessSync(path, constants.X_OK);
    return Promise.resolve(undefined);
  } catch {
    return Promise.resolve(`no executable at ${path}`);
  }
}

/**
 * Builds dist/ and finds the real components the suites run against. Outside CI a missing one
 * skips its suites, named at the start and the end of the run; in CI it fails the run instead.
 */
export default async function setup(project: TestProject) {
  // The tests of svc and svc-server as processes run the build (dist/), as users do; building first keeps
  // it current. The same incremental compile as `npm run typecheck`: right after one it only hashes files.
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.check.json'], { stdio: 'inherit' });
  // Made once here, so that the workers' first PGlite stores start from them too (src/store/pglite-template.ts);
  // a seed that fails shows in the tests, where each boot tries it again.
  await emptyClusterTemplate();
  await seededPglite().catch(() => undefined);

  const postgresUrl = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  const redisUrl = process.env.TEST_REDIS_URL ?? DEFAULT_TEST_REDIS_URL;
  const chromiumPath = process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM_PATH;
  const components: Component[] = [
    { name: 'PostgreSQL', suites: 'every [postgres] case (PGlite cases still run)', install: 'start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start', probe: () => probePostgres(postgresUrl) },
    { name: 'Redis', suites: 'shared state on Redis, rate limits on Redis, the two-instance and Redis-outage tests', install: 'apt-get install redis-server, then: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no', probe: () => probeRedis(redisUrl) },
    { name: 'chromium', suites: 'the page tests in a real browser (OAuth pages, migration dashboard, guide and plan)', install: 'apt-get install chromium (Debian\'s package; set CHROMIUM_PATH for another binary)', probe: () => probeChromium(chromiumPath) },
    { name: 'curl and jq', suites: 'the migration guide\'s curl examples run against the service', install: 'apt-get install curl jq', probe: () => probePrograms(['curl', 'jq'], ['--version']) },
    { name: 'promtool', suites: 'the unit tests of the Prometheus alert rules (ops/prometheus)', install: 'apt-get install prometheus (Debian\'s package brings promtool)', probe: () => probePrograms(['promtool'], ['--version']) },
    { name: 'nginx', suites: 'the shipped nginx configuration, checked and run in front of two cores (deploy/nginx)', install: 'apt-get install nginx (Debian\'s package)', probe: () => probePrograms(['nginx'], ['-v']) },
    { name: 'systemd-analyze', suites: 'the systemd units verified and their sandbox scored (deploy/systemd)', install: 'apt-get install systemd (Debian\'s package brings systemd-analyze)', probe: () => probePrograms(['systemd-analyze'], ['--version']) },
  ];
  const missing = (await Promise.all(components.map(async (c) => ({ ...c, reason: await c.probe() })))).filter((c) => c.reason !== undefined);
  const report = missing.map((c) => `  - ${c.name}: ${c.reason}\n    not run: ${c.suites}\n    to run them: ${c.install}`).join('\n');

  if (missing.length > 0 && process.env.CI) throw new Error(`CI runs every suite, but these components are missing:\n${report}`);
  if (missing.length > 0) console.warn(`\n!! Suites that will not run on this machine (CI would fail):\n${report}\n`);

  const has = (name: string) => !missing.some((c) => c.name === name);
  project.provide('postgresUrl', has('PostgreSQL') ? postgresUrl : '');
  // Without it, every [postgres] boot migrates and seeds a schema of its own, as slow as before but as right.
  const postgresTemplate = has('PostgreSQL')
    ? await makePostgresTemplate(postgresUrl).catch((error: unknown) => {
        console.warn(`\n!! No template database; each [postgres] boot migrates and seeds its own: ${String(error)}\n`);
        return undefined;
      })
    : undefined;
  project.provide('postgresTemplate', postgresTemplate?.template ?? null);
  project.provide('redisUrl', has('Redis') ? redisUrl : '');
  project.provide('chromiumPath', has('chromium') ? chromiumPath : '');
  project.provide('curlAndJq', has('curl and jq'));
  project.provide('promtool', has('promtool'));
  project.provide('nginx', has('nginx'));
  project.provide('systemdAnalyze', has('systemd-analyze'));

  return async () => {
    await postgresTemplate?.drop();
    if (missing.length > 0) console.warn(`\n!! Not run on this machine, and why:\n${report}\n`);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    /** The run's migrated and seeded template database; null without PostgreSQL or when it could not be made. */
    postgresTemplate: PostgresTemplate | null;
    redisUrl: string;
    chromiumPath: string;
    /** curl and jq are on PATH. */
    curlAndJq: boolean;
    /** Prometheus's promtool is on PATH. */
    promtool: boolean;
    /** Debian's nginx is on PATH. */
    nginx: boolean;
    /** systemd-analyze is on PATH. */
    systemdAnalyze: boolean;
  }
}
