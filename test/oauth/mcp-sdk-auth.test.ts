import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, FormBrowser, MemoryOAuthProvider } from './support.js';

describe.each(backends())('the MCP SDK client’s own OAuth flow against the demo (%s)', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(async () => s.close());

  it('discovers, registers, authorizes through the pages, exchanges the code and calls tools', async () => {
    const provider = new MemoryOAuthProvider();
    const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
    const first = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl!;
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${s.baseUrl}/api/oauth/authorize`);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('resource')).toBe(s.mcpUrl);

    const { callback } = await authorizeInBrowser(new FormBrowser(), authorizationUrl.href, provider.redirectUrl, {
      email: 'manager@acme.example',
      grant: ['mcp:employees:read', 'mcp:orders:read'],
    });
    await first.finishAuth(callback.searchParams.get('code')!);
    expect(provider.tokens()?.refresh_token).toBeTruthy();

    const transport = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await client.connect(transport);
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(whoami.structuredContent)).toContain('manager@acme.example');
    const employees = await client.callTool({ name: 'list_employees', arguments: {} });
    expect(employees.isError).toBeFalsy();
    await client.close();
  });
});
