import { createHash, randomInt } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import pg from 'pg';
import { seedDemo, type DemoData } from '../../src/domain/demo.js';
import { openDb, pgliteDb, pgliteOptions } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrations.js';
import { createPglite, defaultTemplateDir, dumpCluster, pgliteVersion, readOwnedFile, replaceFile, usableCacheDir } from '../../src/store/pglite-template.js';

/*
 * A test app's store starts as a copy of one migrated and seeded once, instead of migrating and seeding
 * its own: on PGlite a cluster kept in the cache directory beside the empty one (src/store/pglite-template.ts),
 * on PostgreSQL a template database made for the run. Each is made from the current source of the migrations
 * and of the seed: a change to either makes a new one. Every store copied from one holds the same demo data,
 * kept beside it, with the plaintext demo API keys (public demo data, as `npm start` prints them).
 */

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const RELATIVE_IMPORT = /(?:from|import\()\s*'(\.{1,2}\/[^']+)\.js'/g;

/** The migrations, the seed and every module of src/ they import, transitively. */
export function seedSourceFiles(): string[] {
  const found = new Set<string>();
  const pending = [join(SRC, 'store/migrations.ts'), join(SRC, 'domain/demo.ts')];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (found.has(file)) continue;
    found.add(file);
    for (const [, path] of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) pending.push(resolve(dirname(file), `${path}.ts`));
  }
  return [...found].sort();
}

let sourceHash: string | undefined;

/** What a seeded store holds follows from these files alone: their digest names the copies made from them. */
export function seedSourceHash(): string {
  if (sourceHash === undefined) {
    const digest = createHash('sha256');
    for (const file of seedSourceFiles()) digest.update(relative(SRC, file)).update('\0').update(readFileSync(file)).update('\0');
    sourceHash = digest.digest('hex').slice(0, 16);
  }
  return sourceHash;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

export interface SeededPglite {
  /** The tarball a new store is unpacked from (createPglite). */
  cluster: Blob;
  demo: DemoData;
}

interface SeededCopy {
  gzipped: Uint8Array;
  demo: DemoData;
}

const SEEDED_PREFIX = 'pglite-';
const SEEDED_INFIX = '-seeded-';
export const seededPgliteFile = (dir: string) => join(dir, `${SEEDED_PREFIX}${pgliteVersion()}${SEEDED_INFIX}${seedSourceHash()}.tar.gz`);
/** Beside the cluster: its digest and the demo data seeded into it. */
export const demoFile = (clusterFile: string) => `${clusterFile}.json`;

/** A cluster and its demo data that belong together: a run making its own at the same moment may have replaced either file. */
function readSeeded(file: string): SeededCopy | undefined {
  const gzipped = readOwnedFile(file);
  const side = readOwnedFile(demoFile(file));
  if (!gzipped || !side) return undefined;
  try {
    const { sha256: digest, demo } = JSON.parse(Buffer.from(side).toString('utf8')) as { sha256: string; demo: DemoData };
    return digest === sha256(gzipped) ? { gzipped, demo } : undefined;
  } catch {
    return undefined;
  }
}

async function makeSeeded(): Promise<SeededCopy> {
  const store = await createPglite('memory://', await pgliteOptions());
  try {
    const db = pgliteDb(store);
    await migrate(db);
    const demo = await seedDemo(db);
    return { demo, gzipped: await dumpCluster(store) };
  } finally {
    await store.close();
  }
}

const STALE_AFTER_MS = 24 * 60 * 60 * 1000;

/** Seeded clusters of other sources, a day old: another checkout still using one makes it again. */
function removeOtherSeeded(dir: string, keep: string): void {
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (!name.startsWith(SEEDED_PREFIX) || !name.includes(SEEDED_INFIX) || file === keep || file === demoFile(keep)) continue;
    // Another process may have removed it since the listing.
    const modified = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
    if (Date.now() - modified > STALE_AFTER_MS) rmSync(file, { force: true });
  }
}

const seeded = new Map<string, Promise<SeededPglite>>();

/**
 * The seeded cluster of the current source, read from `dir` or made (and kept there, unless the cache
 * directory is not this user's alone). Read once per process and directory.
 */
export function seededPglite(dir = defaultTemplateDir()): Promise<SeededPglite> {
  let copy = seeded.get(dir);
  if (!copy) {
    copy = (async () => {
      const cached = usableCacheDir(dir);
      const file = seededPgliteFile(dir);
      let made = cached ? readSeeded(file) : undefined;
      if (!made) {
        made = await makeSeeded();
        if (cached) {
          // Each file replaced whole; a reader refuses a cluster beside another one's demo data (readSeeded).
          replaceFile(demoFile(file), JSON.stringify({ sha256: sha256(made.gzipped), demo: made.demo }));
          replaceFile(file, made.gzipped);
          removeOtherSeeded(dir, file);
        }
      }
      // Unzipped once: every store of the process unpacks the same tarball.
      return { cluster: new Blob([gunzipSync(made.gzipped)], { type: 'application/x-tar' }), demo: made.demo };
    })();
    seeded.set(dir, copy);
    copy.catch(() => seeded.delete(dir));
  }
  return copy;
}

/** A run's template database on PostgreSQL, made in global setup. */
export interface PostgresTemplate {
  /** Names this run's databases, so that a later run drops them if this one is killed. */
  run: number;
  database: string;
  sourceHash: string;
  demo: DemoData;
}

/** Held by a run on its databases while it lasts (pg_advisory_lock's two-key space). */
const RUN_LOCK_CLASS = 4_242_002;
const RUN_DATABASE = /^svc_run(\d+)_/;

export const runDatabase = (run: number, suffix: string) => `svc_run${run}_${suffix}`;

/** The server's URL with another database. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Every database of the run `run`. */
async function dropRunDatabases(admin: pg.Client, run: number): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [runDatabase(run, '')]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
}

/** Databases of runs that ended without dropping them (killed): their run's lock is free. */
async function dropLeftovers(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^svc_run[0-9]+_'`);
  for (const run of new Set(rows.map((row) => Number(RUN_DATABASE.exec(row.datname)![1])))) {
    const { rows: [lock] } = await admin.query<{ free: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS free', [RUN_LOCK_CLASS, run]);
    if (!lock!.free) continue;
    await dropRunDatabases(admin, run);
    await admin.query('SELECT pg_advisory_unlock($1, $2)', [RUN_LOCK_CLASS, run]);
  }
}

/**
 * The run's template database, migrated and seeded, which refuses connections (CREATE DATABASE copies only
 * a database no one is connected to). `drop` removes it at the end of the run, with any copy a test left.
 */
export async function makePostgresTemplate(serverUrl: string): Promise<{ template: PostgresTemplate; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await dropLeftovers(admin);
    const run = randomInt(1, 2 ** 31 - 1);
    await admin.query('SELECT pg_advisory_lock($1, $2)', [RUN_LOCK_CLASS, run]);
    const database = runDatabase(run, 'template');
    await admin.query(`CREATE DATABASE ${database}`);
    const db = await openDb({ databaseUrl: databaseUrl(serverUrl, database), dataDir: 'memory://' });
    let demo: DemoData;
    try {
      await migrate(db);
      demo = await seedDemo(db);
    } finally {
      await db.close();
    }
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    return {
      template: { run, database, sourceHash: seedSourceHash(), demo },
      async drop() {
        await dropRunDatabases(admin, run);
        await admin.end();
      },
    };
  } catch (error) {
    await admin.end();
    throw error;
  }
}
