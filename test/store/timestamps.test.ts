import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { openDb, type Db } from '../../src/store/db.js';
import { sql } from '../../src/store/sql.js';
import { backends } from '../helpers/harness.js';

/*
 * Timestamps reach the code as ISO text in UTC with milliseconds, as Date#toISOString writes it. The
 * store rewrites PostgreSQL's UTC text directly instead of parsing it into a Date; checked against
 * PostgreSQL's own formatting of the same instants, at every precision from year 1 to 9999.
 */

describe.each(backends())('timestamps as ISO text [%s]', (backend) => {
  let db: Db;
  beforeAll(async () => {
    db = await openDb(backend === 'postgres' ? { databaseUrl: inject('postgresUrl'), dataDir: 'memory://' } : { dataDir: `memory://${randomBytes(4).toString('hex')}` });
  });
  afterAll(() => db?.close());

  // Whole seconds, milliseconds and microseconds, from year 1 to 9999, and the edges of each.
  const INSTANTS = sql`
    SELECT t, t::text AS raw, to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS iso FROM (
      SELECT timestamptz '0001-01-01 00:00:00+00' + (g * 7919 % 10000) * interval '1 year' / 1.0001
        + (g % 3) * ((g * 104729) % 1000000) * interval '1 microsecond' AS t
      FROM generate_series(1, 3000) g
      UNION ALL SELECT unnest(ARRAY['0001-01-01 00:00:00+00', '1970-01-01 00:00:00+00', '1999-12-31 23:59:59.999+00',
        '2026-11-25 03:06:37.1+00', '2026-11-25 03:06:37.123456+00', '2026-11-25 03:06:37.999999+00',
        '9999-12-31 23:59:59.999999+00']::timestamptz[])) instants`;

  type Instant = { t: string; raw: string; iso: string };

  it('gives the ISO text of every instant', async () => {
    const rows = await db.query<Instant>(INSTANTS);
    expect(rows.length).toBe(3007);
    expect(rows.filter((row) => !row.raw.endsWith('+00'))).toEqual([]);
    // Years 1 to 99 included, which Date's parser read as 1901 to 1999.
    for (const row of rows) expect(row.t, row.raw).toBe(row.iso);
  });

  it('gives the same text when the session runs in another time zone', async () => {
    const rows = await db.transaction(async (tx) => {
      await tx.query(sql`SET LOCAL TimeZone = 'Asia/Kolkata'`);
      return tx.query<Instant>(sql`SELECT * FROM (${INSTANTS}) zoned WHERE t >= '1970-01-01'`);
    });
    expect(rows.length).toBeGreaterThan(1000);
    expect(rows.filter((row) => !row.raw.endsWith('+05:30'))).toEqual([]);
    for (const row of rows) expect(row.t, row.raw).toBe(row.iso);
  });
});
