import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PRETENURING_FLAG } from '../../src/kit/runtime-flags.js';

/*
 * The server's V8 settings (src/kit/runtime-flags.ts), checked in a node process of their own: V8 traces
 * its pretenuring statistics only while allocation-site pretenuring is on, and the workload (object
 * literals that all survive, from one site) gives it statistics to trace.
 */

const WORKLOAD = 'const kept = []; const make = (i) => ({ i, name: "x" + i, nested: { a: i } }); for (let i = 0; i < 1e6; i++) kept.push(make(i));';

async function pretenuringTraced(nodeFlags: string[]): Promise<number> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--trace-pretenuring-statistics', ...nodeFlags, '--import', './dist/src/kit/runtime-flags.js', '-e', WORKLOAD],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout.split('\n').filter((line) => line.includes('pretenuring:')).length;
}

describe('the server process’s V8 settings', () => {
  it('turn allocation-site pretenuring off', async () => {
    expect(await pretenuringTraced([])).toBe(0);
  });

  it('leave it on when node is given the flag explicitly', async () => {
    expect(await pretenuringTraced([PRETENURING_FLAG])).toBeGreaterThan(0);
  });

  it('keep the compiled code of svc-server’s modules for the next start where Node can (22.1 and later)', async () => {
    // No NODE_COMPILE_CACHE: only the service's own call enables the cache, in the temporary directory.
    const temp = mkdtempSync(join(tmpdir(), 'compile-cache-'));
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp };
    delete env.NODE_COMPILE_CACHE;
    await promisify(execFile)(process.execPath, ['dist/src/main.js', '--version'], { env });
    const cached = readdirSync(temp, { recursive: true }).filter((entry) => String(entry).split('/').length === 3);
    if ('enableCompileCache' in module) expect(cached.length).toBeGreaterThan(20);
    else expect(cached).toEqual([]);
  });

  it('are applied before anything else svc-server loads', () => {
    const firstImport = /^import\s[^;]*;/m.exec(readFileSync(new URL('../../src/main.ts', import.meta.url), 'utf8'))?.[0];
    expect(firstImport).toBe("import './kit/runtime-flags.js';");
  });
});
