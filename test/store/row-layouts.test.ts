import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { RowLayouts } from '../../src/store/row-layouts.js';
import type { NamedStatement } from '../../src/store/statement-names.js';
import { adminQuery } from '../helpers/harness.js';

/*
 * A named statement's row layout is built by node-postgres once, then reused while PostgreSQL
 * describes the rows the same way. Counted on node-postgres's own builder (Result#addFields): a
 * node-postgres upgrade that no longer calls it as this module expects fails here, instead of
 * silently costing every query its layout again.
 */

describe.skipIf(!inject('postgresUrl'))('row layouts of named statements [postgres]', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const pools: pg.Pool[] = [];
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: inject('postgresUrl'), options: `-c search_path=${schema}`, max: 1 });
    pools.push(pool);
    return pool;
  };
  const statement = (name: string, text: string): NamedStatement => ({ name: `${name}_${schema}`, text });
  const built = () => vi.spyOn(pg.Result.prototype as unknown as { addFields(fields: unknown): void }, 'addFields');

  beforeAll(async () => {
    await adminQuery(`CREATE SCHEMA ${schema}`);
    await adminQuery(`CREATE TABLE ${schema}.gadgets (id int PRIMARY KEY, size int NOT NULL, note text); INSERT INTO ${schema}.gadgets SELECT n, n * 10, NULL FROM generate_series(1, 5) n`);
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  it('builds a statement’s layout on its first run only; every run’s rows are whole and parsed', async () => {
    const layouts = new RowLayouts();
    const pool = newPool();
    const gadget = statement('gadget', 'SELECT id, size, note FROM gadgets WHERE id = $1');
    const builder = built();
    for (let id = 1; id <= 5; id++) {
      const result = await layouts.run(pool, gadget, [id]);
      expect(result.rows).toEqual([{ id, size: id * 10, note: null }]);
      expect(result.fields.map((field) => field.name)).toEqual(['id', 'size', 'note']);
    }
    expect(builder).toHaveBeenCalledTimes(1);
    // Rows are copies: one changed leaves the next run's alone.
    const [row] = (await layouts.run(pool, gadget, [1])).rows as Record<string, unknown>[];
    row!.extra = true;
    expect((await layouts.run(pool, gadget, [1])).rows).toEqual([{ id: 1, size: 10, note: null }]);
    // Another statement, another layout.
    await layouts.run(pool, statement('size', 'SELECT size FROM gadgets WHERE id = $1'), [2]);
    expect(builder).toHaveBeenCalledTimes(2);
  });

  it('builds it anew when the same statement comes back with other column types (prepared after a migration on a new connection)', async () => {
    const layouts = new RowLayouts();
    const sizes = statement('sizes', 'SELECT id, size FROM gadgets WHERE id = $1');
    expect((await layouts.run(newPool(), sizes, [3])).rows).toEqual([{ id: 3, size: 30 }]);
    await adminQuery(`ALTER TABLE ${schema}.gadgets ALTER COLUMN size TYPE text`);
    const builder = built();
    // A connection that never held the statement prepares it with the new types: text, no longer parsed as int.
    const afterMigration = newPool();
    expect((await layouts.run(afterMigration, sizes, [3])).rows).toEqual([{ id: 3, size: '30' }]);
    expect((await layouts.run(afterMigration, sizes, [4])).rows).toEqual([{ id: 4, size: '40' }]);
    expect(builder).toHaveBeenCalledTimes(1);
  });

  it('builds it anew when a column comes back renamed with the same type', async () => {
    const layouts = new RowLayouts();
    const everything = statement('everything', 'SELECT * FROM gadgets WHERE id = $1');
    expect(Object.keys((await layouts.run(newPool(), everything, [5])).rows[0] as object)).toContain('note');
    await adminQuery(`ALTER TABLE ${schema}.gadgets RENAME COLUMN note TO remark`);
    const builder = built();
    const rows = (await layouts.run(newPool(), everything, [5])).rows as Record<string, unknown>[];
    expect(Object.keys(rows[0]!)).toEqual(['id', 'size', 'remark']);
    expect(builder).toHaveBeenCalledTimes(1);
  });
});
