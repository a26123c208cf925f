import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';

/*
 * A new PGlite store starts as a copy of an empty cluster instead of running initdb, which takes about
 * 4 s of WebAssembly here against about 1 s to unpack the copy: every test's store, every demo and every
 * new data directory. The copy is made once per PGlite version, in the user's cache directory, and
 * kept only there: a file another user could have written is never used. Where the cache cannot be
 * written or read, stores are made by initdb as before.
 */

/** PGlite.create, passed in so that this module loads PGlite no earlier than the store does. */
export type CreatePglite = (path: string, options?: PGliteOptions) => Promise<PGlite>;

const PGLITE_VERSION = (() => {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  // The package's entry is dist/index.*: its package.json is one folder up, and not among its exports.
  return (JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string }).version;
})();

/** Where the cluster copies are kept: $XDG_CACHE_HOME (or ~/.cache)/device-lifecycle-service. */
export function defaultTemplateDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'device-lifecycle-service');
}

/** The file of the empty cluster of this PGlite version in `dir`. */
export const templateFile = (dir: string) => join(dir, `pglite-${PGLITE_VERSION}-empty-cluster.tar.gz`);

/** Ours alone: owned by this user, writable by no one else (a file planted by another user would be a store with their data). */
function ownedAlone(path: string): boolean {
  const stat = statSync(path);
  return (process.getuid === undefined || stat.uid === process.getuid()) && (stat.mode & 0o022) === 0;
}

async function makeTemplate(create: CreatePglite, file: string): Promise<Blob> {
  const empty = await create('memory://');
  try {
    const tarball = await empty.dumpDataDir('gzip');
    // Written whole, then renamed: a process reading at the same moment sees the old file or none.
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, Buffer.from(await tarball.arrayBuffer()), { mode: 0o600 });
    renameSync(partial, file);
    return tarball;
  } finally {
    await empty.close();
  }
}

const templates = new Map<string, Promise<Blob | undefined>>();

/**
 * The empty cluster to start new stores from, made on first use; undefined when the cache directory
 * cannot be used. Read once per process and directory.
 */
export function emptyClusterTemplate(create: CreatePglite, dir = defaultTemplateDir()): Promise<Blob | undefined> {
  let template = templates.get(dir);
  if (!template) {
    template = (async () => {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        if (!ownedAlone(dir)) return undefined;
        const file = templateFile(dir);
        if (existsSync(file) && ownedAlone(file)) return new Blob([readFileSync(file)]);
        return await makeTemplate(create, file);
      } catch {
        return undefined;
      }
    })();
    templates.set(dir, template);
  }
  return template;
}

/** A directory PGlite would run initdb in: absent or empty. */
const isNewStore = (path: string) => !existsSync(path) || readdirSync(path).length === 0;

/**
 * PGlite.create at `path` (a directory or memory://); a new store is unpacked from the empty-cluster
 * template when there is one. A template that fails to unpack is removed, and the store made by initdb.
 */
export async function createPglite(
  create: CreatePglite,
  path: string,
  options: PGliteOptions,
  templateDir = defaultTemplateDir(),
): Promise<PGlite> {
  const inMemory = path.startsWith('memory://');
  const template = inMemory || isNewStore(path) ? await emptyClusterTemplate(create, templateDir) : undefined;
  if (!template) return create(path, options);
  try {
    return await create(path, { ...options, loadDataDir: template });
  } catch {
    templates.delete(templateDir);
    rmSync(templateFile(templateDir), { force: true });
    // The directory was new: what the failed unpack left of it goes.
    if (!inMemory) rmSync(path, { recursive: true, force: true });
    return create(path, options);
  }
}
