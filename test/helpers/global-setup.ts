import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import type { TestProject } from 'vitest/node';
import pg from 'pg';

export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Finds the PostgreSQL the tests run against. In CI it must be there: the suite refuses to
 * run without it rather than silently testing PGlite alone.
 */
export default async function setup(project: TestProject) {
  // The CLI tests run the built `svc` (dist/), as users do; building first keeps it current.
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });

  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  let reachable = false;
  try {
    await client.connect();
    await client.query('SELECT 1');
    reachable = true;
  } catch (error) {
    if (process.env.CI) throw new Error(`PostgreSQL is required in CI but unreachable at ${url}: ${String(error)}`);
    console.warn(`\n!! PostgreSQL unreachable at ${url}: running PGlite tests only (CI would fail)\n`);
  } finally {
    await client.end().catch(() => undefined);
  }
  project.provide('postgresUrl', reachable ? url : '');
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
