import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeInBrowser, FormBrowser, INSECURE, register } from './support.js';

/*
 * Each MCP client as it signs up today, from what it sends (sources cited per client): its
 * registration body, its authorization request (scope, resource and redirect as it sends them),
 * then sign-in and consent through the real pages, the code exchanged by oauth4webapi, a tool
 * called by the MCP SDK client, and a refresh.
 */

interface RecordedClient {
  name: string;
  /** Where the request was recorded. */
  source: string;
  registration: Record<string, unknown>;
  /** The redirect URI of the authorization request (a loopback one may use another port than registered). */
  redirectUri: string;
  /** The scope parameter as sent; undefined: no scope parameter at all. */
  scope?: string;
  /** `resource` as sent, from the MCP URL; undefined: none sent. */
  resource?: (mcpUrl: string) => string;
  /** Scopes the token ends up with, after consent's defaults. */
  granted: string[];
}

const READS = ['mcp:employees:read', 'mcp:inventory:read', 'mcp:orders:read'];

const CLIENTS: RecordedClient[] = [
  {
    name: 'Claude.ai / Claude Desktop',
    source: 'anthropics/claude-code#5826 (registration body quoted there)',
    registration: {
      client_name: 'Claude',
      redirect_uris: ['https://claude.ai/api/mcp/auth_callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
    redirectUri: 'https://claude.ai/api/mcp/auth_callback',
    scope: 'mcp:employees:read mcp:orders:read',
    resource: (mcpUrl) => mcpUrl,
    granted: ['mcp:employees:read', 'mcp:orders:read'],
  },
  {
    name: 'Claude Code',
    source: 'anthropics/claude-code#10439, #42765 (http://localhost:<ephemeral port>/callback)',
    registration: {
      client_name: 'Claude Code (device-lifecycle)',
      redirect_uris: ['http://localhost:52814/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    redirectUri: 'http://localhost:52814/callback',
    resource: (mcpUrl) => mcpUrl,
    granted: READS,
  },
  {
    name: 'Cursor',
    source: 'bytebase/bytebase#20510, erp-mafia/accounted#2225 (one registration with three redirect URIs)',
    registration: {
      client_name: 'Cursor',
      redirect_uris: [
        'cursor://anysphere.cursor-mcp/oauth/callback',
        'https://www.cursor.com/agents/mcp/oauth/callback',
        'http://localhost:61077/callback',
      ],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    redirectUri: 'cursor://anysphere.cursor-mcp/oauth/callback',
    scope: 'mcp:employees:read mcp:orders:read mcp:inventory:read',
    resource: (mcpUrl) => mcpUrl,
    granted: READS,
  },
  {
    name: 'VS Code',
    source: 'microsoft/vscode#278512 (redirect set, then a random loopback port; scope=openid profile email)',
    registration: {
      client_name: 'Visual Studio Code',
      redirect_uris: ['https://insiders.vscode.dev/redirect', 'https://vscode.dev/redirect', 'http://127.0.0.1/', 'http://127.0.0.1:33418/'],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
    },
    redirectUri: 'http://127.0.0.1:49152/',
    scope: 'openid profile email',
    // Its scheme and host spelled otherwise than the metadata's: equal after RFC 3986 normalisation.
    resource: (mcpUrl) => mcpUrl.replace('http://', 'HTTP://'),
    granted: READS,
  },
  {
    name: 'ChatGPT (connector, by registration)',
    source: 'kunickiaj/codemem#1286, danielealbano/android-remote-control-mcp#166 (connector callbacks)',
    registration: {
      client_name: 'ChatGPT',
      redirect_uris: ['https://chatgpt.com/connector_platform_oauth_redirect', 'https://chatgpt.com/connector/oauth/c_5f2a'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    redirectUri: 'https://chatgpt.com/connector/oauth/c_5f2a',
    scope: 'mcp:orders:read',
    resource: (mcpUrl) => mcpUrl,
    granted: ['mcp:orders:read'],
  },
  {
    name: 'MCP conformance suite, authorization-code scenario',
    source: 'modelcontextprotocol/conformance: src/scenarios/authorization-server (no scope, no resource)',
    registration: {
      client_name: 'conformance',
      redirect_uris: ['http://127.0.0.1:3000/callback'],
      token_endpoint_auth_method: 'none',
    },
    redirectUri: 'http://127.0.0.1:3000/callback',
    granted: READS,
  },
];

async function authorizationUrl(as: oauth.AuthorizationServer, clientId: string, recorded: RecordedClient, mcpUrl: string) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('redirect_uri', recorded.redirectUri);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  if (recorded.scope !== undefined) url.searchParams.set('scope', recorded.scope);
  if (recorded.resource) url.searchParams.set('resource', recorded.resource(mcpUrl));
  return { url: url.href, verifier, state };
}

describe.each(backends())('MCP clients as they sign up today (%s)', (backend) => {
  let s: ListeningTestApp;
  let as: oauth.AuthorizationServer;
  beforeAll(async () => {
    s = await startListeningApp(backend);
    const issuer = new URL(s.baseUrl);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...INSECURE }));
  });
  afterAll(async () => s?.close());

  it.each(CLIENTS)('$name: registers, signs in, consents, calls a tool and refreshes', async (recorded) => {
    const registered = await register(s.baseUrl, recorded.registration);
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    // A client that asked for a secret is registered as public, and told so (RFC 7591 §3.2.1).
    expect(registered.body.token_endpoint_auth_method).toBe('none');
    expect(registered.body.client_secret).toBeUndefined();
    expect(registered.body.redirect_uris).toEqual(recorded.registration.redirect_uris);
    const client: oauth.Client = { client_id: registered.body.client_id, token_endpoint_auth_method: 'none' };

    const request = await authorizationUrl(as, client.client_id, recorded, s.mcpUrl);
    const { callback, consentHtml } = await authorizeInBrowser(new FormBrowser(), request.url, recorded.redirectUri);
    expect(consentHtml).toContain('Allow selected');
    expect(callback.href.startsWith(recorded.redirectUri)).toBe(true);
    expect(callback.searchParams.get('iss')).toBe(as.issuer);

    const params = oauth.validateAuthResponse(as, client, callback, request.state);
    const resource = recorded.resource ? { resource: recorded.resource(s.mcpUrl) } : undefined;
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, recorded.redirectUri, request.verifier, {
        additionalParameters: resource,
        ...INSECURE,
      }),
    );
    expect(tokens.scope?.split(' ').sort()).toEqual(recorded.granted);

    const mcp = new Client({ name: recorded.name, version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }),
    );
    const orders = await mcp.callTool({ name: recorded.granted.includes('mcp:orders:read') ? 'list_orders' : 'whoami', arguments: {} });
    expect(orders.isError, JSON.stringify(orders.content)).toBeFalsy();
    await mcp.close();

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { additionalParameters: resource, ...INSECURE }),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.scope?.split(' ').sort()).toEqual(recorded.granted);
  });
});
