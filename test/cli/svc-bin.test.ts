import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/kit/version.js';
import { isolatedEnv, SVC_BIN, svcBin } from './svc-runner.js';

/*
 * What only the built bin shows, as its own process: the version, and the quiet end when the
 * reader of its output leaves early. Exit codes, stdin and calls to a server from the bin are in
 * svc.test.ts; every other CLI test runs svc in the test's own process.
 */

describe('the built svc bin', { timeout: 60_000 }, () => {
  it('prints its version', async () => {
    const result = await svcBin(['--version'], isolatedEnv());
    expect(result).toEqual({ code: 0, stdout: `${packageVersion()}\n`, stderr: '' });
  });

  it('ends quietly with exit 0 when the reader of its output has left (svc … | head)', () => {
    // head -c 0 leaves before svc writes, so svc's write meets a closed pipe: EPIPE.
    const piped = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" ${SVC_BIN} help exit-codes | head -c 0`], {
      env: isolatedEnv(),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(piped.stderr).toBe('');
    expect(piped.status).toBe(0);
  });
});
