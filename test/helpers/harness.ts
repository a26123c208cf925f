import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/kit/config.js';
import { createCore, type Core, type CoreOptions } from '../../src/app/core.js';
import { seedDemo, type DemoData } from '../../src/domain/demo.js';
import { buildApp } from '../../src/app/http-app.js';
import { pino } from 'pino';
import { freePort } from './ports.js';
import { databaseUrl, runDatabase, seededPglite, seedSourceHash } from './seeded-template.js';

export { freePort };

export type Backend = 'pglite' | 'postgres';

/** Every backend the suite runs on here; PostgreSQL is mandatory in CI (see global-setup). */
export function backends(): Backend[] {
  return inject('postgresUrl') ? ['pglite', 'postgres'] : ['pglite'];
}

/** Runs one statement on the test database as its owner (schemas, terminating backends). */
export async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('postgresUrl') });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

export interface TestApp {
  backend: Backend;
  core: Core;
  app: FastifyInstance;
  demo: DemoData;
  close(): Promise<void>;
}

export const TEST_SECRET_KEY = 'a'.repeat(64);

type TestAppOptions = { config?: Partial<Config>; core?: CoreOptions; seed?: boolean };

/** Where a test app's store is, and the demo data it already holds. */
interface TestStore {
  databaseUrl?: string;
  schema?: string;
  pgliteCluster?: Blob;
  /** Absent when the boot is to migrate (and seed) the store itself. */
  demo?: DemoData;
  drop(): Promise<void>;
}

/**
 * A copy of the seeded template (seeded-template.ts) where it holds exactly what this boot would seed, else
 * a new store the boot migrates and seeds: without the seed, or on a database or data directory of the test's own.
 */
async function testStore(backend: Backend, options: TestAppOptions): Promise<TestStore> {
  const fromTemplate = options.seed !== false && options.config?.databaseUrl === undefined && options.config?.dataDir === undefined;
  const serverUrl = inject('postgresUrl');
  if (backend === 'pglite') {
    if (!fromTemplate) return { drop: async () => {} };
    const { cluster, demo } = await seededPglite();
    return { pgliteCluster: cluster, demo: structuredClone(demo), drop: async () => {} };
  }
  const template = inject('postgresTemplate');
  if (fromTemplate && template?.sourceHash === seedSourceHash()) {
    const database = runDatabase(template.run, randomBytes(6).toString('hex'));
    await adminQuery(`CREATE DATABASE ${database} TEMPLATE ${template.database}`);
    return { databaseUrl: databaseUrl(serverUrl, database), demo: structuredClone(template.demo), drop: () => adminQuery(`DROP DATABASE ${database} WITH (FORCE)`) };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE SCHEMA ${schema}`);
  return { databaseUrl: serverUrl, schema, drop: () => adminQuery(`DROP SCHEMA ${schema} CASCADE`) };
}

/**
 * A real core and app on the chosen backend, seeded with the demo data. On PostgreSQL each call gets its
 * own database (or schema), so test files run in parallel on one server.
 */
export async function startTestApp(backend: Backend, options: TestAppOptions = {}): Promise<TestApp> {
  // Counted for scripts/test-census.sh: a line per boot.
  if (process.env.TEST_CENSUS) appendFileSync(process.env.TEST_CENSUS, `${backend}\n`);
  const store = await testStore(backend, options);
  const config = loadConfig({}, { dataDir: 'memory://', databaseUrl: store.databaseUrl, secretKey: TEST_SECRET_KEY, logLevel: 'silent', ...options.config });
  const core = await createCore(config, { logger: pino({ level: 'silent' }), ...options.core, schema: store.schema, pgliteCluster: store.pgliteCluster });
  const demo = store.demo ?? (options.seed === false ? (undefined as unknown as DemoData) : await seedDemo(core.db));
  const app = await buildApp(core);
  await app.ready();
  return {
    backend,
    core,
    app,
    demo,
    async close() {
      await app.close();
      await core.close();
      await store.drop();
    },
  };
}

export interface ListeningTestApp extends TestApp {
  /** http://127.0.0.1:<port>: also the configured public base URL, so OAuth and MCP discovery URLs are exact. */
  baseUrl: string;
  mcpUrl: string;
}

/** The demo app listening on a loopback port it was configured with: clients speak real HTTP to it. */
export async function startListeningApp(backend: Backend, options: TestAppOptions = {}): Promise<ListeningTestApp> {
  const port = await freePort();
  const t = await startTestApp(backend, { ...options, config: { host: '127.0.0.1', port, ...options?.config } });
  await t.app.listen({ host: '127.0.0.1', port });
  const baseUrl = `http://127.0.0.1:${port}`;
  return { ...t, baseUrl, mcpUrl: `${baseUrl}/mcp` };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, unknown>;
  body: T;
}

/** A tiny client over Fastify inject that speaks the v4 envelope. */
export function client(app: FastifyInstance, apiKey?: string, extraHeaders: Record<string, string> = {}) {
  const headers = { ...(apiKey ? { 'x-api-key': apiKey } : {}), ...extraHeaders };
  const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<ApiResponse> => {
    const response = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: response.statusCode, headers: response.headers, body: response.json() };
  };
  return {
    get: (url: string) => call('GET', url),
    post: (url: string, body: unknown = {}) => call('POST', url, body),
    patch: (url: string, body: unknown = {}) => call('PATCH', url, body),
  };
}

/** Tests that run several `svc-server` commands in a row: each starts a process that opens the store. */
export const SVC_SERVER_STEPS_TIMEOUT_MS = 120_000;

/**
 * For vi.waitFor on what settles in the background: ten times its default of a second, which a busy
 * machine can exceed; a condition that holds returns at its first check.
 */
export const EVENTUALLY = { timeout: 10_000, interval: 50 };
