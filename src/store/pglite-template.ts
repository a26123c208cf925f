import { randomUUID } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';

/*
 * A new PGlite store starts as a copy of an empty cluster instead of running initdb, which takes about
 * 4 s of WebAssembly here against about 1 s to unpack the copy: every test's store, every demo and every
 * new data directory. The copy is made once per PGlite version, in the user's cache directory, and used
 * only from there while this user alone can write it: a copy planted by someone else would be a store
 * with their roles and data. Where the cache cannot be used, stores are made by initdb as before.
 * The same mechanism keeps the tests' migrated and seeded cluster (test/helpers/seeded-template.ts).
 */

/** PGlite.create, PGlite loaded only when a store is opened: a PostgreSQL deployment never loads it. */
async function createStore(path: string, options?: PGliteOptions): Promise<PGlite> {
  const { PGlite } = await import('@electric-sql/pglite');
  return PGlite.create(path, options);
}

function readPgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  // The package's entry is dist/index.*: its package.json is one folder up, and not among its exports.
  return (JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string }).version;
}

let version: string | undefined;

/** The installed PGlite's version: a copy made by another version is never unpacked. */
export const pgliteVersion = () => (version ??= readPgliteVersion());

/** The variable naming the cache directory, as docs/reference/configuration.md lists it. */
export const CACHE_HOME_VARIABLE = {
  name: 'XDG_CACHE_HOME',
  default: '~/.cache',
  description:
    'A new PGlite store is unpacked from an empty cluster kept in `$XDG_CACHE_HOME/device-lifecycle-service/` (made on first use, mode 0600) instead of running initdb. Only a copy owned by this user, in a directory and file no one else can write, is used; a copy that does not unpack is removed; without a usable cache directory stores are made by initdb.',
} as const;

/** Where the cluster copies are kept: $XDG_CACHE_HOME (or ~/.cache, as the XDG spec says for a relative one)/device-lifecycle-service. */
export function defaultTemplateDir(): string {
  const cache = process.env[CACHE_HOME_VARIABLE.name];
  return join(cache && isAbsolute(cache) ? cache : join(homedir(), '.cache'), 'device-lifecycle-service');
}

/** The file of the empty cluster of the installed PGlite's version in `dir` (read on first use, not when the store module loads). */
export const templateFile = (dir: string) => join(dir, `pglite-${pgliteVersion()}-empty-cluster.tar.gz`);

/** Owned by this user and writable by no one else (POSIX: elsewhere the cache is never used). */
const ownedAlone = ({ uid, mode }: { uid: number; mode: number }) => uid === process.getuid?.() && (mode & 0o022) === 0;

/** `dir`, made for this user alone when absent; false when others may write it (nothing in it is trusted) or it cannot be made. */
export function usableCacheDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return ownedAlone(statSync(dir));
  } catch {
    return false;
  }
}

/** `file` in a cache directory, read through a descriptor that is not a symlink's, checked on that descriptor. */
export function readOwnedFile(file: string): Uint8Array | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    return ownedAlone(fstatSync(fd)) ? readFileSync(fd) : undefined;
  } finally {
    closeSync(fd);
  }
}

/** The store's cluster, gzipped; checkpointed first, so that stores unpacked from it start without crash recovery. */
export async function dumpCluster(store: PGlite): Promise<Uint8Array> {
  await store.exec('CHECKPOINT');
  return new Uint8Array(await (await store.dumpDataDir('gzip')).arrayBuffer());
}

/**
 * Writes `bytes` to `file` (mode 0600) whole under a name no one can foresee, then renames it: a reader
 * sees the old file or the new one. A failure leaves the old one; the caller still has what it wrote.
 */
export function replaceFile(file: string, bytes: Uint8Array | string): void {
  const partial = `${file}.${randomUUID()}.partial`;
  try {
    writeFileSync(partial, bytes, { mode: 0o600, flag: 'wx' });
    renameSync(partial, file);
  } catch {
    rmSync(partial, { force: true });
  }
}

async function makeTemplate(file: string): Promise<Uint8Array> {
  const empty = await createStore('memory://');
  let gzipped: Uint8Array;
  try {
    gzipped = await dumpCluster(empty);
  } finally {
    await empty.close();
  }
  replaceFile(file, gzipped);
  return gzipped;
}

const templates = new Map<string, Promise<Uint8Array | undefined>>();

/**
 * The empty cluster to start new stores from, gzipped, made on first use (replacing a copy that is not
 * ours alone); undefined when the cache directory cannot be used. Read once per process and directory.
 */
export function emptyClusterTemplate(dir = defaultTemplateDir()): Promise<Uint8Array | undefined> {
  let template = templates.get(dir);
  if (!template) {
    template = (async () => {
      try {
        if (!usableCacheDir(dir)) return undefined;
        const file = templateFile(dir);
        return readOwnedFile(file) ?? (await makeTemplate(file));
      } catch {
        return undefined;
      }
    })();
    templates.set(dir, template);
  }
  return template;
}

/** Stricter than PGlite, which unpacks into any directory without PG_VERSION, over whatever else it holds. */
const isNewStore = (path: string) => !existsSync(path) || readdirSync(path).length === 0;

/**
 * PGlite.create at `path` (a directory or memory://); a new store is unpacked from `cluster` (a tarball
 * of dumpCluster's, unzipped) when given, else from the empty-cluster template when there is one. A
 * template that fails to unpack is removed, what it left in the new directory goes, and the store is
 * made by initdb.
 */
export async function createPglite(path: string, options: PGliteOptions, templateDir = defaultTemplateDir(), cluster?: Blob): Promise<PGlite> {
  const inMemory = path.startsWith('memory://');
  const isNew = inMemory || isNewStore(path);
  if (cluster && isNew) return createStore(path, { ...options, loadDataDir: cluster });
  const template = isNew ? emptyClusterTemplate(templateDir) : undefined;
  const gzipped = await template;
  if (!gzipped) return createStore(path, options);
  try {
    // Unpacked here, where a broken copy throws: PGlite's own gunzip leaves its stream's error unhandled.
    const tarball = new Blob([gunzipSync(gzipped)], { type: 'application/x-tar' });
    return await createStore(path, { ...options, loadDataDir: tarball });
  } catch {
    if (templates.get(templateDir) === template) templates.delete(templateDir);
    rmSync(templateFile(templateDir), { force: true });
    // The directory was absent or empty: emptied again, initdb finds it as it was.
    if (!inMemory && existsSync(path)) for (const entry of readdirSync(path)) rmSync(join(path, entry), { recursive: true, force: true });
    return createStore(path, options);
  }
}
