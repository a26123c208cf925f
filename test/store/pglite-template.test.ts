import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { createPglite, dumpCluster, templateFile } from '../../src/store/pglite-template.js';

/*
 * New PGlite stores unpacked from a copy of an empty cluster instead of initdb, or from a cluster they are
 * given. A cluster's system identifier is drawn at initdb: stores unpacked from one copy share it, a store
 * made by initdb has its own.
 */

const roots: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `svc-template-${name}-`));
  roots.push(dir);
  return dir;
};

/** A new cache directory holding a copy of the template file in `source`. */
function cacheWithCopyOf(source: string): string {
  const dir = tempDir('cache');
  copyFileSync(templateFile(source), templateFile(dir));
  return dir;
}

async function systemIdentifier(db: PGlite): Promise<string> {
  const { rows } = await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()');
  return rows[0]!.id;
}

/** A store at `path` through createPglite with the copies kept in `templateDir`: its system identifier, then closed. */
async function identifierOfNewStore(path: string, templateDir: string): Promise<string> {
  const db = await createPglite(path, {}, templateDir);
  try {
    return await systemIdentifier(db);
  } finally {
    await db.close();
  }
}

afterAll(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

describe('PGlite stores from the empty-cluster template', () => {
  it('makes the template once, readable by this user alone, and starts every new store from it', async () => {
    const templates = tempDir('cache');
    const first = await identifierOfNewStore('memory://', templates);
    expect(statSync(templateFile(templates)).mode & 0o777).toBe(0o600);
    expect(await identifierOfNewStore('memory://', templates)).toBe(first);
    expect(await identifierOfNewStore(join(tempDir('store'), 'pgdata'), templates)).toBe(first);
  }, 90_000);

  it('keeps what a store unpacked into a directory writes, and opens an existing store as it is', async () => {
    const templates = tempDir('cache');
    const path = join(tempDir('store'), 'pgdata');
    const made = await createPglite(path, {}, templates);
    const id = await systemIdentifier(made);
    await made.exec(`CREATE TABLE kept (note text); INSERT INTO kept VALUES ('written after unpacking')`);
    await made.close();
    // Reopened without the template, and through createPglite, which leaves an existing store alone.
    for (const reopen of [() => PGlite.create(path), () => createPglite(path, {}, templates)]) {
      const db = await reopen();
      expect((await db.query<{ note: string }>('SELECT note FROM kept')).rows).toEqual([{ note: 'written after unpacking' }]);
      expect(await systemIdentifier(db)).toBe(id);
      await db.close();
    }
  }, 90_000);

  it('starts a new store as the cluster it is given, and opens an existing store as it is', async () => {
    const templates = tempDir('cache');
    const source = await createPglite('memory://', {}, templates);
    await source.exec(`CREATE TABLE kept (note text); INSERT INTO kept VALUES ('in the given cluster')`);
    const cluster = new Blob([gunzipSync(await dumpCluster(source))]);
    await source.close();

    const path = join(tempDir('store'), 'pgdata');
    for (const target of ['memory://', path]) {
      const db = await createPglite(target, {}, templates, cluster);
      expect((await db.query<{ note: string }>('SELECT note FROM kept')).rows).toEqual([{ note: 'in the given cluster' }]);
      await db.exec(`UPDATE kept SET note = 'written after unpacking'`);
      await db.close();
    }
    const reopened = await createPglite(path, {}, templates, cluster);
    expect((await reopened.query<{ note: string }>('SELECT note FROM kept')).rows).toEqual([{ note: 'written after unpacking' }]);
    await reopened.close();
  }, 90_000);

  it('unpacks a copy read from the cache, in a later process', async () => {
    const source = tempDir('cache');
    const made = await identifierOfNewStore('memory://', source);
    // Another cache directory holding the same file: this process reads it instead of making one.
    expect(await identifierOfNewStore('memory://', cacheWithCopyOf(source))).toBe(made);
  }, 90_000);

  it('never uses a copy that is not this user’s alone: it makes its own in its place', async () => {
    const source = tempDir('cache');
    const planted = await identifierOfNewStore('memory://', source);

    // A file others may write: replaced by a copy of this process's own.
    const open = cacheWithCopyOf(source);
    chmodSync(templateFile(open), 0o666);
    const own = await identifierOfNewStore('memory://', open);
    expect(own).not.toBe(planted);
    expect(statSync(templateFile(open)).mode & 0o777).toBe(0o600);
    expect(await identifierOfNewStore('memory://', open)).toBe(own);

    // A directory others may write: nothing in it is read or written, each store made by initdb.
    const shared = cacheWithCopyOf(source);
    chmodSync(shared, 0o777);
    const first = await identifierOfNewStore('memory://', shared);
    expect(first).not.toBe(planted);
    expect(await identifierOfNewStore('memory://', shared)).not.toBe(first);
  }, 120_000);

  it('removes a copy that does not unpack, makes the store by initdb in a directory left whole, and the next store a copy anew', async () => {
    const broken = tempDir('cache');
    writeFileSync(templateFile(broken), 'not a tarball', { mode: 0o600 });
    // A store directory that exists, empty: initdb finds it as it was.
    const path = tempDir('store');
    const id = await identifierOfNewStore(path, broken);
    expect(existsSync(templateFile(broken))).toBe(false);
    const reopened = await PGlite.create(path);
    expect(await systemIdentifier(reopened)).toBe(id);
    await reopened.close();

    const next = await identifierOfNewStore('memory://', broken);
    expect(existsSync(templateFile(broken))).toBe(true);
    expect(await identifierOfNewStore('memory://', broken)).toBe(next);
  }, 120_000);
});
