import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyInjectingProxy } from './support/key-injecting-proxy.js';
import { freePort, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, FormBrowser, register } from '../oauth/support.js';

const run = promisify(execFile);
const CONFORMANCE = resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
// The suite imports fs.globSync (Node 22); the shim supplies it on Node 20.
const NODE20_SHIM = resolve('test/mcp/support/node20-fs-shim.mjs');
const conformance = (args: string[]) => [...(process.versions.node.startsWith('20.') ? ['--import', NODE20_SHIM] : []), CONFORMANCE, ...args];

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
  details?: { untestable?: boolean; error?: { code?: number } };
}

/*
 * The server scenarios that apply to a tools-only server, per protocol revision. The others
 * exercise features this server does not offer (resources, prompts, logging, sampling, completion,
 * resumable SSE polling) or the suite's own fixture tools (test_simple_text, test_image_content, …);
 * docs/mcp.md lists them with the reason.
 */
const SCENARIOS = [
  ['2025-11-25', ['server-initialize', 'server-session-lifecycle', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-multiple-streams']],
  ['2026-07-28', ['server-stateless', 'tools-list', 'dns-rebinding-protection', 'caching', 'http-header-validation', 'server-sse-multiple-streams']],
] as const;

/**
 * Checks inside an applicable scenario that cannot apply here, each with the only way it may fail:
 * the suite's diagnostic tools are absent ("untestable"), or the method belongs to a feature this
 * server does not declare (resources, prompts: -32601, as the revision requires).
 */
const NOT_APPLICABLE: Record<string, (check: Check) => boolean> = {
  'sep-2575-server-rejects-undeclared-capability': (check) => check.details?.untestable === true,
  'sep-2575-missing-capability-http-400': (check) => check.details?.untestable === true,
  'sep-2575-http-server-no-independent-requests-on-stream': (check) => check.details?.untestable === true,
  'sep-2575-server-no-log-without-loglevel': (check) => check.details?.untestable === true,
  'sep-2549-prompts-list-caching-hints': (check) => check.details?.error?.code === -32601,
  'sep-2549-resources-list-caching-hints': (check) => check.details?.error?.code === -32601,
  'sep-2549-resources-templates-list-caching-hints': (check) => check.details?.error?.code === -32601,
};

function unexpectedFailures(checks: Check[]): string[] {
  return checks
    .filter((check) => check.status === 'FAILURE' || check.status === 'WARNING')
    .filter((check) => !NOT_APPLICABLE[check.id]?.(check))
    .map((check) => `${check.id}: ${check.errorMessage ?? check.status}`);
}

describe.each(SCENARIOS)('official MCP conformance suite 0.2.0-alpha.12: server scenarios, %s', (revision, scenarios) => {
  let s: ListeningTestApp;
  let proxy: Awaited<ReturnType<typeof startKeyInjectingProxy>>;
  let outDir: string;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
    // The CLI sends no credential: a loopback proxy adds the demo admin's key.
    proxy = await startKeyInjectingProxy(s.baseUrl, s.demo.apiKeys.admin);
    outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  });
  afterAll(async () => {
    await proxy.close();
    await s.close();
    rmSync(outDir, { recursive: true, force: true });
  });

  it.each(scenarios)('passes %s', async (scenario) => {
    const dir = join(outDir, scenario);
    // The CLI exits non-zero on any failed check, the not-applicable ones included: the checks file decides.
    await run(process.execPath, conformance(['server', '--url', `${proxy.url}/mcp`, '--scenario', scenario, '--spec-version', revision, '-o', dir]), {
      timeout: 120_000,
    }).catch(() => undefined);
    const [runDir] = readdirSync(dir);
    const checks = JSON.parse(readFileSync(join(dir, runDir!, 'checks.json'), 'utf8')) as Check[];
    expect(checks.filter((check) => check.status === 'SUCCESS').length).toBeGreaterThan(0);
    expect(unexpectedFailures(checks)).toEqual([]);
  });
});

describe('official MCP conformance suite 0.2.0-alpha.12: authorization-server scenarios', () => {
  let s: ListeningTestApp;
  let outDir: string;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
    outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-as-'));
  });
  afterAll(async () => {
    await s.close();
    rmSync(outDir, { recursive: true, force: true });
  });

  // Both scenarios in one run (the grant reads the metadata the first one fetched). The suite asks for
  // no scope: the read scopes are offered, where once the consent page was a dead end.
  it('passes authorization-server-metadata-endpoint and authorization-code-grant, a person signing in and consenting', async () => {
    const port = await freePort();
    const callback = `http://127.0.0.1:${port}/callback`;
    const client = await register(s.baseUrl, { client_name: 'MCP conformance', redirect_uris: [callback], token_endpoint_auth_method: 'none' });
    const child = spawn(
      process.execPath,
      conformance(['authorization', '--url', s.baseUrl, '--client-id', client.body.client_id, '--resource', s.mcpUrl, '--port', String(port), '-o', outDir]),
    );
    let stdout = '';
    const exited = new Promise<number | null>((done) => child.on('exit', done));
    const authorizationUrl = await new Promise<string>((found, fail) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const url = /^(http\S+\/api\/oauth\/authorize\?\S+)$/m.exec(stdout)?.[1];
        if (url) found(url);
      });
      void exited.then(() => fail(new Error(`the suite ended before asking for a sign-in:\n${stdout}`)));
    });
    const { callback: redirect } = await authorizeInBrowser(new FormBrowser(), authorizationUrl, callback);
    expect(redirect.searchParams.get('code')).toBeTruthy();
    // The browser lands on the suite's callback server, which then exchanges the code.
    await fetch(redirect).then((response) => response.arrayBuffer());
    expect(await exited).toBe(0);
    expect(stdout).toMatch(/✓ authorization-server-metadata-endpoint: [1-9]\d* passed, 0 failed/);
    expect(stdout).toMatch(/✓ authorization-code-grant: [1-9]\d* passed, 0 failed/);
    expect(stdout).toMatch(/Total: \d+ passed, 0 failed/);
  }, 60_000);
});
