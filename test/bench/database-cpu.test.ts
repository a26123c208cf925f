import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { cpuCounters } from '../../bench/lib.js';

describe.skipIf(!inject('postgresUrl'))('the PostgreSQL CPU a benchmark row counts', () => {
  it('counts the run’s queries, and no share of a backend that exits during the run', async () => {
    const connect = async () => {
      const client = new pg.Client({ connectionString: inject('postgresUrl') });
      await client.connect();
      return client;
    };
    const [leaving, staying] = await Promise.all([connect(), connect()]);
    let left = false;
    try {
      // More CPU before the run than the run itself uses: were it taken off when its backend exits, the count would go below zero.
      await leaving.query('SELECT sum(g) FROM generate_series(1, 10000000) g');
      const counters = cpuCounters();
      await leaving.end();
      left = true;
      for (let i = 0; i < 5; i++) await staying.query('SELECT sum(g) FROM generate_series(1, 1000000) g');
      const { databaseCpuMicrosPerRequest } = counters.perRequest(5);
      // Each query sums a million rows: tens of milliseconds of CPU, far above the clock tick of /proc (10 ms).
      expect(databaseCpuMicrosPerRequest).toBeGreaterThan(5_000);
    } finally {
      await staying.end();
      if (!left) await leaving.end();
    }
  }, 60_000);
});
