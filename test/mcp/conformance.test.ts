import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyInjectingProxy } from './support/key-injecting-proxy.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

const run = promisify(execFile);
const CONFORMANCE = resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
// The suite imports fs.globSync (Node 22); the shim supplies it on Node 20.
const NODE20_SHIM = resolve('test/mcp/support/node20-fs-shim.mjs');

describe('official MCP conformance suite (server scenarios)', () => {
  let s: ListeningTestApp;
  let proxy: Awaited<ReturnType<typeof startKeyInjectingProxy>>;
  let outDir: string;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
    proxy = await startKeyInjectingProxy(s.baseUrl, s.demo.apiKeys.admin);
    outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  });
  afterAll(async () => {
    await proxy.close();
    await s.close();
    rmSync(outDir, { recursive: true, force: true });
  });

  // The applicable scenarios: the others exercise features this server does not offer (resources, prompts,
  // logging, sampling, completion) or the suite's own fixture tools (test_simple_text, …). Suite 0.1.16 has no
  // session-lifecycle scenario; test/mcp/transport.test.ts covers sessions.
  it.each(['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'])('passes %s', async (scenario) => {
    const result = await run(
      process.execPath,
      ['--import', NODE20_SHIM, CONFORMANCE, 'server', '--url', `${proxy.url}/mcp`, '--scenario', scenario, '-o', outDir],
      { timeout: 120_000 },
    );
    // The CLI exits non-zero on a failed check; the summary must show every check passed.
    expect(result.stdout).toMatch(/Passed: (\d+)\/\1, 0 failed/);
  });
});
