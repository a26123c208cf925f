import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, rawPost } from '../mcp/support/mcp.js';
import { authorizationRequest, authorizeInBrowser, discoverAndRegister, exchangeCode, FormBrowser, INSECURE } from './support.js';

async function mcpClient(url: string, accessToken: string): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${accessToken}` } } }));
  return client;
}

describe.each(backends())('OAuth 2.1 full flow with oauth4webapi (%s)', (backend) => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp(backend);
  });
  afterAll(async () => s.close());

  it('discovers from a 401 on /mcp, registers, authorizes through the pages, calls MCP, refreshes and revokes', async () => {
    // Discovery: the 401 points to the protected-resource metadata, which names the authorization server.
    const unauthenticated = await rawPost(s.mcpUrl, initializeBody());
    expect(unauthenticated.status).toBe(401);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(unauthenticated.headers.get('www-authenticate') ?? '')?.[1];
    expect(metadataUrl).toBe(`${s.baseUrl}/.well-known/oauth-protected-resource`);
    const resource = await oauth.processResourceDiscoveryResponse(
      new URL(s.mcpUrl),
      await oauth.resourceDiscoveryRequest(new URL(s.mcpUrl), INSECURE),
    );
    expect(resource.authorization_servers).toEqual([s.baseUrl]);
    expect(resource.scopes_supported).toHaveLength(5);

    const registered = await discoverAndRegister(resource.authorization_servers![0]!);
    expect(registered.as.code_challenge_methods_supported).toEqual(['S256']);
    expect(registered.client.client_secret).toBeUndefined();

    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read mcp:orders:write mcp:employees:read');
    const browser = new FormBrowser();
    const { callback, consentHtml } = await authorizeInBrowser(browser, request.url, registered.redirectUri, {
      grant: ['mcp:orders:read', 'mcp:employees:read'],
    });
    expect(consentHtml).toContain('Unverified application');
    expect(consentHtml).toContain('127.0.0.1:53682');
    expect(consentHtml).toContain('list_orders');
    expect(callback.searchParams.get('state')).toBe(request.state);

    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope?.split(' ').sort()).toEqual(['mcp:employees:read', 'mcp:orders:read']);
    expect(tokens.refresh_token).toBeTruthy();

    const client = await mcpClient(s.mcpUrl, tokens.access_token);
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(whoami.structuredContent)).toContain('admin@demo.example');
    const orders = await client.callTool({ name: 'list_orders', arguments: {} });
    expect(orders.isError).toBeFalsy();
    await client.close();

    // Refresh rotates: a new refresh token each time.
    const refreshed = await oauth.processRefreshTokenResponse(
      registered.as,
      registered.client,
      await oauth.refreshTokenGrantRequest(registered.as, registered.client, oauth.None(), tokens.refresh_token!, INSECURE),
    );
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    // Revocation: the next MCP request with the revoked token is refused.
    const revoked = await oauth.revocationRequest(registered.as, registered.client, oauth.None(), refreshed.access_token, INSECURE);
    await oauth.processRevocationResponse(revoked);
    const after = await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${refreshed.access_token}` });
    expect(after.status).toBe(401);
  });
});
