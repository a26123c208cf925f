import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startListeningApp, startTestApp, type ListeningTestApp, type TestApp } from '../helpers/harness.js';
import { initializeBody, rawPost } from '../mcp/support/mcp.js';
import { authorizeInBrowser, FormBrowser, MemoryOAuthProvider } from './support.js';

/*
 * The address clients reach the service at. With PUBLIC_BASE_URL unset, the loopback name a client
 * was given (localhost, 127.0.0.1, [::1]) is the one the discovery documents, the issuer and the
 * token audience name, so SDK clients, which check that, connect under each; any other Host header
 * gets the configured address. With PUBLIC_BASE_URL set, no Host header changes anything.
 */

/** A GET with the Host header as given (fetch does not let a caller choose it); status, headers and body. */
function getWithHost(url: string, host: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(url, { headers: { host } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text ? JSON.parse(text) : undefined }));
    });
    sent.on('error', reject).end();
  });
}

/** What a client at `mcpUrl` reads first: the protected-resource metadata and its authorization server's. */
async function discovery(mcpUrl: string) {
  const origin = new URL(mcpUrl).origin;
  const resource = await (await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`)).json();
  const server = await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json();
  const challenge = (await rawPost(mcpUrl, initializeBody())).headers.get('www-authenticate');
  return { resource, server, challenge };
}

describe('loopback addresses with PUBLIC_BASE_URL unset', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    t = await startTestApp('pglite', { config: { host: '127.0.0.1', port } });
    // Both stacks, so that [::1] and 127.0.0.1 reach the same service.
    await t.app.listen({ host: '::', port });
  });
  afterAll(() => t.close());

  it.each(['localhost', '[::1]', '127.0.0.1'])('an SDK client at http://%s:<port>/mcp discovers that address, completes OAuth and calls a tool', async (name) => {
    const base = `http://${name}:${port}`;
    const mcpUrl = `${base}/mcp`;
    const { resource, server, challenge } = await discovery(mcpUrl);
    expect(resource).toMatchObject({ resource: mcpUrl, authorization_servers: [base] });
    expect(server).toMatchObject({ issuer: base, authorization_endpoint: `${base}/api/oauth/authorize` });
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource"`);

    const provider = new MemoryOAuthProvider();
    const client = new Client({ name: `loopback ${name}`, version: '1.0.0' });
    const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(mcpUrl);
    const { callback } = await authorizeInBrowser(new FormBrowser(), provider.authorizationUrl!.href, provider.redirectUrl, { email: 'manager@acme.example' });
    expect(callback.searchParams.get('iss')).toBe(base);
    await first.finishAuth(callback.searchParams.get('code')!);

    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(whoami.structuredContent)).toContain('manager@acme.example');
    await client.close();

    // The token's audience is the MCP endpoint at this address; at another it is refused.
    const elsewhere = name === 'localhost' ? `http://127.0.0.1:${port}/mcp` : `http://localhost:${port}/mcp`;
    const refused = await rawPost(elsewhere, initializeBody(), { authorization: `Bearer ${provider.tokens()!.access_token}` });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('answers any other Host header with the configured address, never reflecting it', async () => {
    const configured = `http://127.0.0.1:${port}`;
    for (const host of [`evil.example:${port}`, `localhost:${port + 1}`, 'localhost', `localhost.:${port}`]) {
      const resource = await getWithHost(`${configured}/.well-known/oauth-protected-resource`, host);
      expect(resource.body, host).toMatchObject({ resource: `${configured}/mcp`, authorization_servers: [configured] });
      const server = await getWithHost(`${configured}/.well-known/oauth-authorization-server`, host);
      expect(server.body.issuer, host).toBe(configured);
    }
  });
});

describe('PUBLIC_BASE_URL set', () => {
  const PUBLIC = 'https://svc.example.com';
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp('pglite', { config: { publicBaseUrl: PUBLIC } });
  });
  afterAll(() => s.close());

  it('names PUBLIC_BASE_URL whatever the Host header, loopback or foreign', async () => {
    const port = new URL(s.baseUrl).port;
    for (const host of [`localhost:${port}`, `[::1]:${port}`, `127.0.0.1:${port}`, 'evil.example']) {
      const resource = await getWithHost(`${s.baseUrl}/.well-known/oauth-protected-resource`, host);
      expect(resource.body, host).toMatchObject({ resource: `${PUBLIC}/mcp`, authorization_servers: [PUBLIC] });
      const server = await getWithHost(`${s.baseUrl}/.well-known/oauth-authorization-server`, host);
      expect(server.body.issuer, host).toBe(PUBLIC);
    }
    const challenge = (await rawPost(s.mcpUrl, initializeBody())).headers.get('www-authenticate');
    expect(challenge).toContain(`resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource"`);
  });
});
