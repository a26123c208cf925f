import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, UnauthorizedError as UnauthorizedErrorV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAUTH_SCOPES } from '../../src/oauth/scopes.js';
import { backends, freePort, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, FormBrowser, MemoryOAuthProvider, type AuthorizeOptions } from './support.js';

/*
 * A write over OAuth, as each official client reaches it (the SDK v1 and v2 clients, the MCP
 * Inspector's command line): its own discovery, registration and authorization-code + PKCE flow
 * against the listening service, sign-in and consent through the real pages (the boxes as the page
 * checks them, unless a test unchecks some), then a write tool.
 */

const MANAGER = 'manager@acme.example';
const READS = OAUTH_SCOPES.filter((scope) => scope.endsWith(':read'));

/**
 * Drives the authorization the client asked for through sign-in and consent in the user's browser
 * (one per user: a second authorization finds the user signed in, and the connection it made).
 */
async function consent(provider: MemoryOAuthProvider, browser: FormBrowser, options: AuthorizeOptions = {}) {
  const asked = provider.authorizationUrl!;
  provider.authorizationUrl = undefined;
  const { callback, consentHtml } = await authorizeInBrowser(browser, asked.href, provider.redirectUrl, { email: MANAGER, ...options });
  return { asked: asked.searchParams.get('scope')?.split(' ') ?? [], callback, consentHtml };
}

/** The boxes the consent page checks before the user touches it. */
function checkedOn(consentHtml: string): string[] {
  return [...consentHtml.matchAll(/name="scopes" value="([^"]+)" checked/g)].map((m) => m[1]!);
}

/** MCP Inspector 2's command line, the launcher `npx @modelcontextprotocol/inspector --cli` runs. */
const INSPECTOR = join(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json'), '../clients/launcher/build/index.js');

/**
 * Runs the Inspector's command line against `mcpUrl` as a person at a terminal would, headless: it
 * registers, prints the authorization URL and listens on a loopback callback; the user's browser
 * (`authorize`) signs in, consents and is sent to that callback. Its own home, so nothing of a real
 * user's is read or written; its browser opener is a no-op (the URL is taken from what it prints).
 */
async function inspectorWithOAuth(mcpUrl: string, args: string[], authorize: (url: string, redirectUri: string) => Promise<URL>) {
  const home = await mkdtemp(join(tmpdir(), 'inspector-home-'));
  try {
    // The opener it uses (the `open` package's own xdg-open) ends with $BROWSER when there is no display.
    const noBrowser = join(home, 'no-browser');
    await writeFile(noBrowser, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const callbackUrl = `http://127.0.0.1:${await freePort()}/oauth/callback`;
    const child = spawn(process.execPath, [INSPECTOR, '--cli', mcpUrl, '--transport', 'http', '--callback-url', callbackUrl, ...args], {
      env: { ...process.env, HOME: home, BROWSER: noBrowser, MCP_AUTO_OPEN_ENABLED: 'true', MCP_INSPECTOR_SECRET_STORE: 'memory' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const printed = await new Promise<string | undefined>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const url = /Please navigate to: (\S+)/.exec(stderr)?.[1];
        if (url) resolve(url);
      });
      void exited.then(() => resolve(undefined));
    });
    if (printed === undefined) throw new Error(`the Inspector printed no authorization URL: ${stderr}`);
    const callback = await authorize(printed, callbackUrl);
    // The browser arrives at the Inspector's callback, which exchanges the code and goes on.
    expect((await fetch(callback)).status).toBe(200);
    const code = await exited;
    expect(code, stderr).toBe(0);
    return { asked: new URL(printed).searchParams.get('scope')?.split(' ') ?? [], result: JSON.parse(stdout) };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

let hired = 0;
/** A write tool's arguments: a new employee of the manager's company, each time another. */
function newEmployee(s: ListeningTestApp) {
  hired += 1;
  return { displayName: `OAuth Hire ${hired}`, email: `oauth.hire.${hired}@acme.example`, country: 'DE', companyId: s.demo.companies.acme };
}

describe.each(backends())('writes over OAuth with the official clients (%s)', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(async () => s.close());

  /** An SDK v1 client through its first authorization (consent as `options` ticks it), connected with its token. */
  async function authorizedV1(options: AuthorizeOptions = {}) {
    const provider = new MemoryOAuthProvider();
    const client = new Client({ name: 'sdk-v1', version: '1.0.0' });
    const first = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const authorized = await consent(provider, new FormBrowser(), options);
    await first.finishAuth(authorized.callback.searchParams.get('code')!);
    await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider }));
    return { client, provider, ...authorized };
  }

  /** The same with the SDK v2 client, in `browser`; the connected transport is returned to finish a step-up. */
  async function authorizedV2(browser: FormBrowser, options: AuthorizeOptions = {}) {
    const provider = new MemoryOAuthProvider();
    const client = new ClientV2({ name: 'sdk-v2', version: '1.0.0' });
    const first = new TransportV2(new URL(s.mcpUrl), { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedErrorV2);
    const authorized = await consent(provider, browser, options);
    await first.finishAuth(authorized.callback.searchParams);
    const transport = new TransportV2(new URL(s.mcpUrl), { authProvider: provider });
    await client.connect(transport);
    return { client, provider, transport, ...authorized };
  }

  it('SDK v1: the first challenge asks for every scope, consent checks them, and a write succeeds after one consent', async () => {
    const { client, provider, asked, consentHtml } = await authorizedV1();
    expect(asked.sort()).toEqual([...OAUTH_SCOPES].sort());
    expect(checkedOn(consentHtml).sort()).toEqual([...OAUTH_SCOPES].sort());
    const created = await client.callTool({ name: 'create_employee', arguments: newEmployee(s) });
    expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
    expect(provider.authorizationUrl).toBeUndefined();
    await client.close();
  });

  it('SDK v1: a user who unchecked writes leaves a refresh-only client without them (no loop, a clear 403)', async () => {
    const { client, provider } = await authorizedV1({ grant: READS });
    // SDK v1 answers insufficient_scope by refreshing, which cannot add a scope: the call fails once.
    const refused = await client.callTool({ name: 'create_employee', arguments: newEmployee(s) }).catch((error: unknown) => error);
    expect(String(refused)).toContain('403');
    expect(provider.authorizationUrl).toBeUndefined();
    expect(provider.tokens()?.scope?.split(' ').sort()).toEqual([...READS].sort());
    await client.close();
  });

  it('MCP Inspector: its command line reaches a write tool after one consent', async () => {
    const employee = newEmployee(s);
    const toolArgs = Object.entries(employee).flatMap(([name, value]) => ['--tool-arg', `${name}=${value}`]);
    const { asked, result } = await inspectorWithOAuth(s.mcpUrl, ['--method', 'tools/call', '--tool-name', 'create_employee', ...toolArgs], async (url, redirectUri) => {
      const { callback } = await authorizeInBrowser(new FormBrowser(), url, redirectUri, { email: MANAGER });
      return callback;
    });
    expect(asked.sort()).toEqual([...OAUTH_SCOPES].sort());
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ email: employee.email });
  });

  it('SDK v2: a write succeeds after one consent', async () => {
    const { client, asked } = await authorizedV2(new FormBrowser());
    expect(asked.sort()).toEqual([...OAUTH_SCOPES].sort());
    const created = await client.callTool({ name: 'create_employee', arguments: newEmployee(s) });
    expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
    await client.close();
  });

  it('SDK v2: steps up after the user unchecked writes; the write it asks for is checked, one consent more', async () => {
    const browser = new FormBrowser();
    const { client, provider, transport } = await authorizedV2(browser, { grant: READS });
    // The 403 names the granted scopes and the one needed; the client sends its user to authorize that.
    await expect(client.callTool({ name: 'create_employee', arguments: newEmployee(s) })).rejects.toBeInstanceOf(UnauthorizedErrorV2);
    const stepUp = await consent(provider, browser);
    expect(stepUp.asked).toContain('mcp:employees:write');
    expect(checkedOn(stepUp.consentHtml)).toContain('mcp:employees:write');
    await transport.finishAuth(stepUp.callback.searchParams);

    const created = await client.callTool({ name: 'create_employee', arguments: newEmployee(s) });
    expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
    expect(provider.tokens()?.scope?.split(' ')).toContain('mcp:employees:write');
    await client.close();
  });
});
