import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { DatabaseUnavailable, openDb, type Db, type Listening } from '../../src/store/db.js';
import { containsText, raw, Sql, sql, type Planning } from '../../src/store/sql.js';
import { adminQuery } from '../helpers/harness.js';

/*
 * Statements run often are prepared on each PostgreSQL connection (parsed and planned once), and
 * nothing a caller sees changes: not after a migration changes a prepared statement's result type,
 * not after every connection is cut. Queries run one at a time, so the pool lends its one idle
 * connection each time and pg_prepared_statements (per connection) shows what it holds.
 */

const APPLICATION_NAME = `svc_prepared_${process.pid}`;

describe.skipIf(!inject('postgresUrl'))('prepared statements [postgres]', () => {
  let db: Db;
  let listening: Listening;
  const schema = `t_${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    await adminQuery(`CREATE SCHEMA ${schema}`);
    const url = new URL(inject('postgresUrl'));
    url.searchParams.set('application_name', APPLICATION_NAME);
    db = await openDb({ databaseUrl: url.toString(), dataDir: 'memory://', schema });
    listening = await db.listen('svc_prepared_test', () => undefined, () => undefined);
    await db.exec('CREATE TABLE gadgets (id int PRIMARY KEY, size int NOT NULL); INSERT INTO gadgets SELECT n, n * 10 FROM generate_series(1, 20) n');
  });
  afterAll(async () => {
    await listening?.stop();
    await db?.close();
    await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  const gadget = (id: number) => db.query<{ id: number; size: unknown }>(sql`SELECT id, size FROM gadgets WHERE id = ${id}`);
  const GADGET_TEXT = 'SELECT id, size FROM gadgets WHERE id = $1';
  // What a connection holds: one of the statements planned as `planning` says (each planning has connections of its own).
  const prepared = (planning: Planning = 'auto') =>
    db.query<{ name: string; statement: string; generic: number; custom: number; runs: number }>(
      new Sql(['SELECT name, statement, generic_plans AS generic, custom_plans AS custom, generic_plans + custom_plans AS runs FROM pg_prepared_statements'], [], planning),
    );
  const search = (id: number, text: string) => db.query(sql`SELECT id FROM gadgets WHERE id = ${id} AND ${containsText(text, [sql`size::text`])}`);

  it('parses a statement run often once, then only binds and executes it', async () => {
    for (let id = 1; id <= 10; id++) expect(await gadget(id)).toEqual([{ id, size: id * 10 }]);
    const held = (await prepared()).filter((p) => p.statement === GADGET_TEXT);
    // The first two runs go unnamed; the other eight run the one prepared statement.
    expect(held.map(({ name, statement, runs }) => ({ name, statement, runs }))).toEqual([{ name: expect.stringMatching(/^s\d+_/), statement: GADGET_TEXT, runs: 8 }]);
  });

  it('never names a text that varies from call to call', async () => {
    for (let n = 0; n < 5; n++) await db.query(sql`SELECT size FROM gadgets WHERE id = 1 AND ${raw(`${n}`)} = ${n}`);
    expect((await prepared()).filter((p) => p.statement.includes('AND 3 = '))).toEqual([]);
  });

  it('parses a search once, but plans it with its pattern on every call: a cached plan cannot know whether it is rare or common', async () => {
    // With a key in it, the generic plan would cost no more than a custom one: left to itself,
    // PostgreSQL would switch to it after five runs.
    for (let n = 0; n < 10; n++) expect(await search(12, '20')).toEqual([{ id: 12 }]);
    const held = (await prepared('custom')).filter((p) => p.statement.includes(' LIKE '));
    expect(held.map(({ statement, generic, custom }) => ({ statement, generic, custom }))).toEqual([
      { statement: expect.stringContaining('FROM gadgets'), generic: 0, custom: 8 },
    ]);
    expect((await prepared()).filter((p) => p.statement.includes(' LIKE '))).toEqual([]);
  });

  it('keeps answering when a migration changes what a prepared statement returns', async () => {
    const sizesOf7 = () => db.query(sql`SELECT id, size FROM gadgets WHERE ${containsText('7', [sql`id::text`])}`);
    for (let i = 0; i < 5; i++) await Promise.all([gadget(1), sizesOf7()]);
    await db.exec('ALTER TABLE gadgets ALTER COLUMN size TYPE text');
    // The stale plans are retried unnamed, then prepared anew under the next generation's name.
    expect(await sizesOf7()).toEqual([{ id: 7, size: '70' }, { id: 17, size: '170' }]);
    expect(await gadget(2)).toEqual([{ id: 2, size: '20' }]);
    for (let id = 3; id <= 7; id++) expect(await gadget(id)).toEqual([{ id, size: String(id * 10) }]);
    const held = (await prepared()).filter((p) => p.statement === GADGET_TEXT);
    expect(held.map((p) => p.name.split('_')[0])).toContain('s1');
  });

  it('prepares again on new connections after every connection was cut (a restart)', async () => {
    for (let i = 0; i < 5; i++) await Promise.all([gadget(1), search(14, '40')]);
    await adminQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${APPLICATION_NAME}'`);
    // The lost connection answers once as unavailable (503 to an HTTP caller); the next call reconnects.
    const first = await gadget(4).catch((error: unknown) => error);
    if (first instanceof Error) expect(first).toBeInstanceOf(DatabaseUnavailable);
    for (let i = 0; i < 5; i++) expect(await gadget(4)).toEqual([{ id: 4, size: '40' }]);
    const held = (await prepared()).filter((p) => p.statement === GADGET_TEXT);
    expect(held).toHaveLength(1);
    expect(held[0]!.runs).toBeGreaterThanOrEqual(5);
    // A search's new connection plans per call again: the setting is made on every connection, not once.
    await search(14, '40').catch(() => undefined);
    for (let i = 0; i < 8; i++) expect(await search(14, '40')).toEqual([{ id: 14 }]);
    const searches = (await prepared('custom')).filter((p) => p.statement.includes(' LIKE '));
    expect(searches).toHaveLength(1);
    expect(searches[0]).toMatchObject({ generic: 0 });
    expect(searches[0]!.custom).toBeGreaterThanOrEqual(6);
  });

  // Last: after it, this store names no statement any more.
  it('runs unnamed from then on when a connection drops its names (a pooler that discards session state)', async () => {
    for (let i = 0; i < 5; i++) await gadget(5);
    expect((await prepared()).filter((p) => p.statement === GADGET_TEXT)).toHaveLength(1);
    await listening.caughtUp!();
    const beforeLoss = performance.now();
    await gadget(5);
    expect(listening.caughtUp!(beforeLoss)).toBeUndefined();
    await db.query(sql`DEALLOCATE ALL`);
    // The name the pool believes prepared is gone: the call is answered, unnamed.
    expect(await gadget(6)).toEqual([{ id: 6, size: '60' }]);
    for (let i = 0; i < 5; i++) expect(await gadget(6)).toEqual([{ id: 6, size: '60' }]);
    expect(await prepared()).toEqual([]);
    // Nor is a statement's answer taken as proof the change feed caught up: the backend may not be the one
    // that listened. (The round trip first covers any connection the pool opened meanwhile.)
    await listening.caughtUp!();
    const afterLoss = performance.now();
    await gadget(6);
    const waiting = listening.caughtUp!(afterLoss);
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
  });
});
