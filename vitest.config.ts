import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Left out of `npm run test:quick`, the inner loop: the files that start processes as users and operators
 * do (svc-server, the built svc, a PostgreSQL or Redis of their own, promtool, curl, the conformance
 * suite) or a browser; the fault, scale, fuzz and benchmark suites; the store templates' own tests.
 * `npm test` and CI run every file.
 */
const LEFT_OUT_OF_QUICK = [
  'test/faults/**',
  'test/fuzz/**',
  'test/store/seeded-template.test.ts',
  'test/scale/**',
  'test/bench/**',
  'test/deploy/**',
  'test/**/*.browser.test.ts',
  'test/oauth/browser.test.ts',
  'test/mcp/conformance.test.ts',
  'test/mcp/inspector.test.ts',
  'test/cli/svc-bin.test.ts',
  'test/cli/svc-server.test.ts',
  'test/cli/legacy-keys-cli.test.ts',
  'test/cli/orders-cli.test.ts',
  'test/server/shutdown.test.ts',
  'test/server/successor-mint.test.ts',
  'test/oauth/signing-key.test.ts',
  'test/oauth/set-password.test.ts',
  'test/store/pglite-template.test.ts',
  'test/gateway/apart.test.ts',
  'test/gateway/migration-guide-examples.test.ts',
  'test/ops/alerts.test.ts',
  'test/shared-state/redis-outage.test.ts',
];
const quick = process.env.TEST_SCOPE === 'quick';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: quick ? LEFT_OUT_OF_QUICK : [],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll's default second is too short on a busy machine; a condition that holds returns at once.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    // A worker per core, not vitest's cores − 1: much of a test's time is spent waiting on PostgreSQL,
    // Redis and the processes it starts (measured on 2 cores: 6 min against 12).
    maxWorkers: availableParallelism(),
    minWorkers: 1,
    // A worker's files share its module cache, sparing each file about 2 s of imports: every app a test
    // boots has its own registry, caches and store, so nothing a file asserts depends on a fresh process.
    isolate: false,
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
