import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, FormBrowser } from './support.js';

/** What a desktop MCP client keeps: its registration, tokens and the pending PKCE verifier. */
class MemoryOAuthProvider implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:47123/oauth/callback';
  authorizationUrl: URL | undefined;
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

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
