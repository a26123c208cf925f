import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg, { type FieldDef } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { RowLayouts } from '../../src/store/row-layouts.js';
import type { NamedStatement } from '../../src/store/statement-names.js';
import { adminQuery } from '../helpers/harness.js';

/*
 * node-postgres's private fields as row-layouts.ts finds them, on the pinned release; then, on
 * PostgreSQL: a named statement's row layout is built by node-postgres once, then reused while PostgreSQL
 * describes the rows the same way. Counted on node-postgres's own builder (Result#addFields): a
 * node-postgres upgrade that no longer calls it as this module expects fails here, instead of
 * silently costing every query its layout again.
 */

/**
 * The node-postgres release whose private fields src/store/row-layouts.ts sets (Query#_result,
 * Result#_parsers and #_prebuiltEmptyResultObject). package.json pins pg to it: an upgrade fails
 * here, in CI, and is taken only with the patch checked anew (docs/decisions/0001-pg-row-layouts.md).
 */
const PATCHED_PG = '8.23.1';

describe('the node-postgres internals that row layouts set', () => {
  const field = (name: string, dataTypeID: number): FieldDef => ({ name, dataTypeID, format: 'text', tableID: 0, columnID: 0, dataTypeSize: -1, dataTypeModifier: -1 });
  interface Internals {
    _result: { fields: FieldDef[]; _parsers: unknown[] | undefined; _prebuiltEmptyResultObject: object | null; addFields(fields: FieldDef[]): void; parseRow(values: unknown[]): unknown };
    handleRowDescription(message: { fields: FieldDef[] }): void;
    handleDataRow(message: { fields: unknown[] }): void;
  }

  it('is the pinned release, installed and declared', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies.pg, 'package.json must pin pg exactly: row-layouts.ts sets its private fields').toBe(PATCHED_PG);
    const installed = (createRequire(import.meta.url)('pg/package.json') as { version: string }).version;
    expect(installed, `pg ${installed} is installed; row-layouts.ts was written for ${PATCHED_PG}`).toBe(PATCHED_PG);
  });

  it('hands a row description to the query’s own Result, whose layout fields are what parseRow reads', () => {
    const query = new pg.Query({ name: 'layout_probe', text: 'SELECT 1' }, []) as unknown as Internals;
    const result = query._result;
    expect(result).toBeInstanceOf(pg.Result);
    // node-postgres's own layout: one parser per column, and an empty row holding every column.
    const fields = [field('id', 23), field('note', 25)];
    query.handleRowDescription({ fields });
    expect(result.fields).toBe(fields);
    expect(result._parsers).toHaveLength(2);
    for (const parser of result._parsers!) expect(typeof parser).toBe('function');
    expect(result._prebuiltEmptyResultObject).toEqual({ id: null, note: null });
    expect((result._parsers![0] as (text: string) => unknown)('7')).toBe(7);

    // An own addFields on the Result is the one the query calls (how row-layouts.ts steps in).
    const again = new pg.Query({ name: 'layout_probe', text: 'SELECT 1' }, []) as unknown as Internals;
    const own = vi.fn((described: FieldDef[]) => {
      again._result.fields = described;
      again._result._parsers = [(text: string) => `id ${text}`, (text: string) => `note ${text}`];
      again._result._prebuiltEmptyResultObject = { id: null, note: null };
    });
    again._result.addFields = own;
    again.handleRowDescription({ fields });
    expect(own).toHaveBeenCalledWith(fields);
    // parseRow builds each row from exactly the fields set above.
    expect(again._result.parseRow(['1', null])).toEqual({ id: 'id 1', note: null });
    expect(again._result.parseRow(['2', 'x'])).toEqual({ id: 'id 2', note: 'note x' });
  });
});

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
