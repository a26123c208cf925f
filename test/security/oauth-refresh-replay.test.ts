import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, rawPost } from '../mcp/support/mcp.js';
import { authorizationRequest, authorizeInBrowser, discoverAndRegister, exchangeCode, FormBrowser, INSECURE, type RegisteredClient } from '../oauth/support.js';

/*
 * A rotated refresh token presented again within the grace window (a client that refreshed twice at
 * once, or a thief racing it) receives the very answer of its rotation: never a second live chain.
 */

describe.each(backends())('refresh replay inside the grace window [%s]', (backend) => {
  let s: ListeningTestApp;
  let registered: RegisteredClient;
  /** How far the server's clock runs ahead of the wall clock. */
  let ahead = 0;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => new Date(Date.now() + ahead) } });
    registered = await discoverAndRegister(s.baseUrl);
  });
  afterAll(async () => s?.close());

  async function connect(): Promise<oauth.TokenEndpointResponse> {
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read');
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
    return exchangeCode(registered, callback, request, s.mcpUrl);
  }

  async function refresh(refreshToken: string): Promise<oauth.TokenEndpointResponse> {
    const response = await oauth.refreshTokenGrantRequest(registered.as, registered.client, oauth.None(), refreshToken, INSECURE);
    return oauth.processRefreshTokenResponse(registered.as, registered.client, response);
  }

  const mcpStatus = async (accessToken: string) => (await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${accessToken}` })).status;

  it('answers a second presentation with the same successor tokens: one chain lives on', async () => {
    const tokens = await connect();
    const first = await refresh(tokens.refresh_token!);
    const again = await refresh(tokens.refresh_token!);
    expect(again.refresh_token).toBe(first.refresh_token);
    expect(again.access_token).toBe(first.access_token);
    // The one chain goes on, and the original token still yields nothing new.
    const next = await refresh(first.refresh_token!);
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(await mcpStatus(next.access_token)).toBe(200);
    expect((await refresh(tokens.refresh_token!)).refresh_token).toBe(first.refresh_token);
  });

  it('answers presentations sent at once with one answer', async () => {
    const tokens = await connect();
    const answers = await Promise.all([1, 2, 3].map(() => refresh(tokens.refresh_token!)));
    expect(new Set(answers.map((answer) => answer.refresh_token)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.access_token)).size).toBe(1);
  });

  it('after the grace window a presentation is a replay: the whole connection is revoked', async () => {
    const tokens = await connect();
    const first = await refresh(tokens.refresh_token!);
    ahead = (s.core.config.oauthRefreshGraceSeconds + 1) * 1000;
    try {
      await expect(refresh(tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    } finally {
      ahead = 0;
    }
    await expect(refresh(first.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await mcpStatus(first.access_token)).toBe(401);
  });

  it('gives nothing to another client presenting the token, nor after the connection is revoked', async () => {
    const tokens = await connect();
    const first = await refresh(tokens.refresh_token!);
    const other = await discoverAndRegister(s.baseUrl);
    const stolen = await oauth.refreshTokenGrantRequest(other.as, other.client, oauth.None(), tokens.refresh_token!, INSECURE);
    await expect(oauth.processRefreshTokenResponse(other.as, other.client, stolen)).rejects.toMatchObject({ error: 'invalid_grant' });
    // Revoking the successor ends the connection: the old token no longer brings back its answer.
    await oauth.processRevocationResponse(await oauth.revocationRequest(registered.as, registered.client, oauth.None(), first.refresh_token!, INSECURE));
    await expect(refresh(tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await mcpStatus(first.access_token)).toBe(401);
  });
});
