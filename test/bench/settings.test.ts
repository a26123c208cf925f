import { describe, expect, it } from 'vitest';
import { benchSettings } from '../../bench/lib.js';

describe('the settings a results file names', () => {
  it('lists the BENCH_ settings in order, as they would be typed before the command', () => {
    expect(benchSettings({ BENCH_SECONDS: '3', BENCH_ROUNDS: '10', PATH: '/usr/bin', HOME: '/root' })).toBe('BENCH_ROUNDS=10 BENCH_SECONDS=3 ');
    expect(benchSettings({ PATH: '/usr/bin' })).toBe('');
  });

  it('never writes a database password into a results file', () => {
    const shown = benchSettings({ BENCH_DATABASE_URL: 'postgres://bench:s3cret-pw@db.internal:5432/test' });
    expect(shown).not.toContain('s3cret-pw');
    expect(shown).toBe('BENCH_DATABASE_URL=postgres://bench:***@db.internal:5432/test ');
    expect(benchSettings({ BENCH_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' })).toBe('BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test ');
    // node-postgres also reads passwords from the query string.
    const inQuery = benchSettings({ BENCH_DATABASE_URL: 'postgres://bench@db/test?password=pw-one&sslpassword=pw-two&sslmode=require' });
    expect(inQuery).not.toMatch(/pw-one|pw-two/);
    expect(inQuery).toContain('sslmode=require');
  });
});
