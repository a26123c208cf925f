import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizationRequest, authorizeInBrowser, discoverAndRegister, FormBrowser } from './support.js';

/*
 * Some MCP clients (Goose-like) registered as public (token_endpoint_auth_method none) still send
 * HTTP Basic with an empty secret at the token endpoint. That is a public client presenting its id:
 * it gets its tokens, as it would with client_id in the form; a secret is still refused.
 */

describe('a public client presenting HTTP Basic with an empty secret', () => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp('pglite');
  });
  afterAll(() => s.close());

  /** RFC 6749 §2.3.1: id and secret form-urlencoded, joined by a colon, in Base64. */
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const token = async (authorization: string, form: Record<string, string>) => {
    const response = await fetch(`${s.baseUrl}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
      body: new URLSearchParams(form).toString(),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };

  it('exchanges its code and refreshes as a client of method none; a secret is refused', async () => {
    const registered = await discoverAndRegister(s.baseUrl);
    const clientId = registered.client.client_id;
    const request = await authorizationRequest(registered, s.mcpUrl);
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
    const code = callback.searchParams.get('code')!;
    const grant = { grant_type: 'authorization_code', code, redirect_uri: registered.redirectUri, code_verifier: request.verifier, resource: s.mcpUrl };

    const issued = await token(basic(clientId, ''), grant);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body).toMatchObject({ token_type: 'Bearer', access_token: expect.any(String), refresh_token: expect.any(String) });
    const me = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.body.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'goose-like', version: '1' } } }),
    });
    expect(me.status).toBe(200);

    const refreshed = await token(basic(clientId, ''), { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token!, resource: s.mcpUrl });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);

    const withSecret = await token(basic(clientId, 'a-secret'), { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token!, resource: s.mcpUrl });
    expect(withSecret.status).toBe(401);
    expect(withSecret.body.error).toBe('invalid_client');
  });

  it('leaves a Basic id that differs from the form’s client_id to the provider, which refuses it', async () => {
    const registered = await discoverAndRegister(s.baseUrl);
    const other = await discoverAndRegister(s.baseUrl);
    const answer = await token(basic(other.client.client_id, ''), { grant_type: 'refresh_token', refresh_token: 'x', client_id: registered.client.client_id });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
  });
});
