import { copyFileSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { sql } from '../../src/store/sql.js';
import { demoFile, seededPglite, seededPgliteFile, seedSourceFiles } from '../helpers/seeded-template.js';

/* The migrated and seeded PGlite cluster test apps start from (test/helpers/seeded-template.ts). */

const roots: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-seeded-'));
  roots.push(dir);
  return dir;
};

/** A new cache directory holding copies of the seeded cluster and its demo data in `source`. */
function cacheWithCopiesOf(source: string): string {
  const dir = tempDir();
  for (const file of [seededPgliteFile(source), demoFile(seededPgliteFile(source))]) copyFileSync(file, join(dir, relative(source, file)));
  return dir;
}

afterAll(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

describe('the seeded PGlite cluster of test apps', () => {
  it('is named after the source of the migrations and of everything the seed runs', () => {
    const files = seedSourceFiles().map((file) => relative(process.cwd(), file));
    expect(files).toEqual(expect.arrayContaining(['src/store/migrations.ts', 'src/domain/demo.ts', 'src/domain/admin.ts', 'src/access/api-keys.ts']));
    expect(files).not.toContain('src/app/http-app.ts');
  });

  it('holds the demo data kept beside it, readable by this user alone, and is read back by a later process', async () => {
    const dir = tempDir();
    const { cluster, demo } = await seededPglite(dir);
    for (const file of [seededPgliteFile(dir), demoFile(seededPgliteFile(dir))]) expect(statSync(file).mode & 0o777).toBe(0o600);
    const db = await openDb({ dataDir: 'memory://', pgliteCluster: cluster });
    try {
      const companies = await db.query<{ id: string }>(sql`SELECT id FROM companies ORDER BY id`);
      expect(companies.map((c) => c.id)).toEqual(Object.values(demo.companies).sort());
      const users = await db.query<{ id: string }>(sql`SELECT id FROM users ORDER BY id`);
      expect(users.map((u) => u.id)).toEqual(Object.values(demo.users).sort());
    } finally {
      await db.close();
    }
    expect((await seededPglite(cacheWithCopiesOf(dir))).demo).toEqual(demo);
  }, 90_000);

  it('is made anew when the demo data beside it is another cluster’s (two runs making theirs at once)', async () => {
    const dir = tempDir();
    const { demo } = await seededPglite(dir);
    const mixed = cacheWithCopiesOf(dir);
    const other = await seededPglite(tempDir());
    writeFileSync(demoFile(seededPgliteFile(mixed)), JSON.stringify({ sha256: 'not this cluster', demo: other.demo }));
    const remade = await seededPglite(mixed);
    expect(remade.demo).not.toEqual(demo);
    expect(remade.demo).not.toEqual(other.demo);
    expect((await seededPglite(cacheWithCopiesOf(mixed))).demo).toEqual(remade.demo);
  }, 120_000);

  it('removes the seeded clusters of other sources once a day old when it makes one', async () => {
    const dir = tempDir();
    const old = join(dir, 'pglite-0.0.0-seeded-0000000000000000.tar.gz');
    const recent = join(dir, 'pglite-0.0.0-seeded-1111111111111111.tar.gz');
    for (const file of [old, demoFile(old), recent, demoFile(recent)]) writeFileSync(file, '', { mode: 0o600 });
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    for (const file of [old, demoFile(old)]) utimesSync(file, twoDaysAgo, twoDaysAgo);
    await seededPglite(dir);
    const exists = (file: string) => statSync(file, { throwIfNoEntry: false }) !== undefined;
    expect([old, demoFile(old)].map(exists)).toEqual([false, false]);
    expect([recent, demoFile(recent), seededPgliteFile(dir)].map(exists)).toEqual([true, true, true]);
  }, 90_000);
});
