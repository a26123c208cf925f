import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { untilHealthy } from '../helpers/healthz.js';
import { freePort } from '../helpers/ports.js';

/*
 * `npm start` (scripts/start.mjs) on a checkout whose build is current: it compiles nothing and says
 * what it starts. The global setup has just compiled dist/ from these sources, so the build's stamp is
 * set to now, as a build would leave it (a checkout that never ran `npm run build` has none: it builds).
 */

describe('npm start on an unchanged checkout', () => {
  it('builds nothing, says what it starts, and serves the demo', async () => {
    const stamp = 'dist/.build.tsbuildinfo';
    if (!existsSync(stamp)) execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
    const now = new Date();
    utimesSync(stamp, now, now);
    const port = await freePort();
    const child = spawn(process.execPath, ['scripts/start.mjs', '--port', String(port)], {
      env: { ...process.env, DATA_DIR: join(mkdtempSync(join(tmpdir(), 'npm-start-')), 'data'), LOG_LEVEL: 'silent', SHUTDOWN_DRAIN_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      expect(await untilHealthy(`http://127.0.0.1:${port}`, child, { timeoutMs: 60_000, probe: '/readyz' })).toBe(true);
      expect(stderr).toContain('Starting svc-server serve --demo');
      expect(stderr).toContain('Demo API keys');
      expect(stderr).not.toMatch(/build/i);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
    }
  });
});
