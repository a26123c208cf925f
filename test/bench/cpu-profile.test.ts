import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isMainThreadProfile, layerOf, layerTimes, type CpuProfile } from '../../bench/support/cpu-profile.js';

describe('the layers of a CPU profile (bench profile)', () => {
  it('puts a frame in its layer by package, node module or native name', () => {
    const at = (url: string, functionName = 'f') => layerOf({ functionName, url });
    expect(at('file:///srv/app/node_modules/pg-protocol/dist/parser.js')).toBe('pg, pg-protocol, pg-pool');
    expect(at('file:///srv/app/node_modules/pg/lib/client.js')).toBe('pg, pg-protocol, pg-pool');
    expect(at('file:///srv/app/node_modules/@fastify/cookie/plugin.js')).toBe('Fastify and its parts');
    expect(at('file:///srv/app/node_modules/pino/lib/proto.js')).toBe('logging (pino, the request line)');
    expect(at('file:///srv/app/dist/src/http/request-log.js')).toBe('logging (pino, the request line)');
    expect(at('file:///srv/app/node_modules/zod/v4/core/schemas.js')).toBe('zod, prom-client');
    expect(at('file:///srv/app/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js')).toBe('MCP SDK');
    expect(at('file:///srv/app/node_modules/oidc-provider/lib/index.js')).toBe('other packages');
    expect(at('file:///srv/app/dist/src/mcp/endpoint.js')).toBe('our code (the reference’s own, for it)');
    expect(at('node:_http_server')).toBe('node: HTTP, streams, net, timers');
    expect(at('', 'writev')).toBe('socket writes (writev)');
    expect(at('', 'stringify')).toBe('other native calls (JSON, crypto…)');
    expect(at('', '(idle)')).toBe('idle');
    expect(at('', '(garbage collector)')).toBe('garbage collection');
  });

  it('knows the main thread\'s profile among a process\'s files', () => {
    expect(isMainThreadProfile('CPU.20261127.122800.11665.0.001.cpuprofile')).toBe(true);
    expect(isMainThreadProfile('CPU.20261127.122801.11665.1.002.cpuprofile')).toBe(false);
    expect(isMainThreadProfile('CPU.20261127.122800.11665.0.001.cpuprofile.tmp')).toBe(false);
  });

  const dir = mkdtempSync(join(tmpdir(), 'cpu-profile-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('counts only the samples of a window, on the clock another process reads', () => {
    // A real profile: 300 ms of work, then 300 ms of waiting, each span's ends read from the monotonic clock.
    const now = () => Number(process.hrtime.bigint() / 1000n);
    const started = now();
    const script = join(dir, 'spin.mjs');
    writeFileSync(
      script,
      `const now = () => Number(process.hrtime.bigint() / 1000n);
       const spans = {};
       let from = now(); let x = 0;
       while (now() - from < 300_000) for (let i = 0; i < 100_000; i++) x += Math.sqrt(x + i);
       spans.busy = { from, to: now() };
       from = now();
       setTimeout(() => { spans.idle = { from, to: now() }; console.log(JSON.stringify(spans)); }, 300);`,
    );
    const spans = JSON.parse(execFileSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=500', script], { encoding: 'utf8' })) as Record<
      'busy' | 'idle',
      { from: number; to: number }
    >;
    const ended = now();
    const files = readdirSync(dir).filter(isMainThreadProfile);
    expect(files).toHaveLength(1);
    const profile = JSON.parse(readFileSync(join(dir, files[0]!), 'utf8')) as CpuProfile;
    // The child's profile lies within this process's reading of the same clock.
    expect(profile.startTime).toBeGreaterThan(started);
    expect(profile.endTime).toBeLessThan(ended);
    const share = (span: { from: number; to: number }, layer: string) => (layerTimes(profile, [span]).get(layer as never) ?? 0) / (span.to - span.from);
    expect(share(spans.busy, 'our code (the reference’s own, for it)')).toBeGreaterThan(0.8);
    expect(share(spans.idle, 'idle')).toBeGreaterThan(0.8);
    // Several windows add up.
    const idleOf = (windows: Array<{ from: number; to: number }>) => layerTimes(profile, windows).get('idle') ?? 0;
    expect(idleOf([spans.busy, spans.idle])).toBeCloseTo(idleOf([spans.busy]) + idleOf([spans.idle]), 6);
    expect(() => layerTimes(profile, [spans.busy, { from: profile.endTime + 1_000_000, to: profile.endTime + 2_000_000 }])).toThrow(/no sample in the window/);
  });
});
