import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ephemeralJwks } from '../../src/oauth/provider.js';

/*
 * The provider's per-process signing key. On Node 20, exporting a freshly generated RSA key object as
 * JWK could hang the process for good: a garbage collection inside the export ran the generation
 * job's destructor, which waited on the lock the export held (seen in CI: a test worker stuck in a
 * futex under KeyObjectHandle::ExportJWK → ~KeyGenJob). A young generation of 1 MB with garbage made
 * between keys brings a collection into the export within a few dozen keys; the old code hung there.
 */

// The build (global-setup makes it), so the child needs no TypeScript loader.
const PROVIDER = fileURLToPath(new URL('../../dist/src/oauth/provider.js', import.meta.url));
const KEYS = 120;

describe('the provider signing key', () => {
  it('is an RS256 private JWK whose public part is a 2048-bit RSA key', async () => {
    const [jwk] = (await ephemeralJwks()).keys;
    expect(jwk).toMatchObject({ kty: 'RSA', use: 'sig', alg: 'RS256', kid: 'ephemeral', d: expect.any(String) });
    expect(createPublicKey({ key: { kty: 'RSA', n: jwk!.n!, e: jwk!.e! }, format: 'jwk' }).asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it(`is made ${KEYS} times over under constant garbage collection without hanging the process`, async () => {
    const script = `
      const { ephemeralJwks } = await import(${JSON.stringify(PROVIDER)});
      let garbage = [];
      for (let i = 0; i < ${KEYS}; i++) {
        await ephemeralJwks();
        for (let j = 0; j < 2000; j++) garbage.push({ j, text: 'x'.repeat(50) });
        if (garbage.length > 20000) garbage = [];
      }
      console.log('made ${KEYS}');`;
    // Not spawnSync: a worker blocked for a minute on a slow machine misses vitest's own calls and fails the run.
    const child = await new Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--max-semi-space-size=1', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 100_000 }, (error, stdout, stderr) =>
        resolve({ signal: error?.signal ?? null, stdout, stderr }),
      );
    });
    expect(child.signal, 'the process hung and was killed').toBeNull();
    expect(child.stdout.trim(), child.stderr).toBe(`made ${KEYS}`);
  }, 120_000);
});
