import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

const run = promisify(execFile);
const INSPECTOR = resolve('node_modules/.bin/mcp-inspector-cli');
// inspector-cli 1.0 checks for its package.json relative to the working directory but imports it relative to itself.
const INSPECTOR_CWD = resolve('node_modules/@modelcontextprotocol/inspector-cli/build');

/** The MCP Inspector's CLI (what `npx @modelcontextprotocol/inspector --cli` runs) against the started server. */
describe('MCP Inspector CLI', () => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
  });
  afterAll(() => s.close());

  async function inspector(...args: string[]): Promise<any> {
    try {
      const { stdout } = await run(
        INSPECTOR,
        ['--cli', s.mcpUrl, '--transport', 'http', '--header', `X-API-KEY: ${s.demo.apiKeys.admin}`, ...args],
        { timeout: 60_000, cwd: INSPECTOR_CWD },
      );
      return JSON.parse(stdout);
    } catch (error) {
      // The command line holds the key: report what the inspector said, not how it was called.
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`mcp-inspector-cli ${args.join(' ')} failed:\n${stderr ?? ''}${stdout ?? ''}`);
    }
  }

  it('lists the 27 tools', async () => {
    const listed = await inspector('--method', 'tools/list');
    expect(listed.tools).toHaveLength(27);
    expect(listed.tools.find((t: { name: string }) => t.name === 'get_employee')).toMatchObject({
      title: 'Get an employee',
      annotations: { readOnlyHint: true },
    });
  });

  it('calls a tool with arguments', async () => {
    const result = await inspector('--method', 'tools/call', '--tool-name', 'get_employee', '--tool-arg', `id=${s.demo.employees.eve}`);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ id: s.demo.employees.eve, email: 'eve@acme.example' });
  });
});
