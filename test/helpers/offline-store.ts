import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { inject } from 'vitest';
import { adminQuery, type Backend } from './harness.js';
import { freshDataDir } from './server-process.js';

/** Where a store for svc-server's offline commands lives, as env for svc-server and as config for an in-process core. */
export interface OfflineStore {
  env: NodeJS.ProcessEnv;
  config: { dataDir: string; databaseUrl?: string };
  drop(): Promise<void>;
}

/** An empty store of the test's own: a data directory, or a database named after `purpose`. */
export async function offlineStore(backend: Backend, purpose: string): Promise<OfflineStore> {
  if (backend === 'pglite') {
    const dataDir = freshDataDir();
    return { env: { DATA_DIR: dataDir, DATABASE_URL: '' }, config: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const database = `${purpose}_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${database}`);
  const url = new URL(inject('postgresUrl'));
  url.pathname = `/${database}`;
  return { env: { DATABASE_URL: url.href }, config: { dataDir: 'memory://', databaseUrl: url.href }, drop: () => adminQuery(`DROP DATABASE ${database} WITH (FORCE)`) };
}
