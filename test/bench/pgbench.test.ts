import { describe, expect, inject, it } from 'vitest';
import { pgbenchScript, runPgbench } from '../../bench/support/pgbench.js';
import { sql } from '../../src/store/sql.js';

describe('a statement of the store as a pgbench script', () => {
  it('names each parameter as a pgbench variable and passes its value with -D', () => {
    const { script, defines } = pgbenchScript(sql`SELECT *
      FROM orders WHERE company_id = ANY(${['co_a', 'co_b']}::text[]) AND id LIKE ${'%x%'} LIMIT ${51}`);
    expect(script).toBe('SELECT * FROM orders WHERE company_id = ANY(:p1::text[]) AND id LIKE :p2 LIMIT :p3;\n');
    expect(defines).toEqual(['-D', 'p1={"co_a","co_b"}', '-D', 'p2=%x%', '-D', 'p3=51']);
  });
});

describe.skipIf(!inject('postgresUrl'))('a statement run by pgbench [postgres]', () => {
  it('runs with the values and the planning the store gives it, and reports every transaction', async () => {
    const names = ['a,b', 'c"d', 'e\\f'];
    // Divides by zero, so pgbench fails, unless each value arrives intact and the plan_cache_mode is the store's;
    // sleeps 2 ms, so that the latencies read from pgbench's log show in milliseconds.
    const statement = sql`SELECT pg_sleep(0.002), 1 / (CASE WHEN ${names}::text[] = ARRAY['a,b', 'c"d', 'e\\f'] AND ${'%x y%'}::text = '%x y%'
      AND current_setting('plan_cache_mode') = 'force_custom_plan' THEN 1 ELSE 0 END)`.planned('custom');
    const result = await runPgbench(inject('postgresUrl')!, statement, 2, 1);
    expect(result.transactions).toBeGreaterThan(10);
    expect(result.p50).toBeGreaterThanOrEqual(2);
    // Milliseconds, not microseconds or seconds: far from 2 ms on a busy machine too.
    expect(result.p50).toBeLessThan(2_000);
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);

    await expect(runPgbench(inject('postgresUrl')!, sql`SELECT 1 / (CASE WHEN ${'a'}::text = 'b' THEN 1 ELSE 0 END)`, 1, 1)).rejects.toThrow(/division by zero/);
  }, 30_000);
});
