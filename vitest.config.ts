import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll's default second is too short on a busy machine; a condition that holds returns at once.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
