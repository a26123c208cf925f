import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { initializeBody, MCP_HEADERS } from './support/mcp.js';

/*
 * A browser-based MCP client (a page on a loopback development origin, or a configured one) reads
 * /mcp and the discovery documents across origins: preflights answer, answers carry the headers it
 * must read. Other origins get no CORS, and the DNS-rebinding check on /mcp still refuses them.
 */

const ALLOWED = 'https://inspector.example';
const PAGE = 'http://localhost:6274';
const EVIL = 'https://evil.example';

describe('CORS on the MCP endpoint and the discovery documents', () => {
  let s: ListeningTestApp;
  beforeAll(async () => {
    s = await startListeningApp('pglite', { config: { mcpAllowedOrigins: [ALLOWED] } });
  });
  afterAll(() => s.close());

  /** A 2025-11-25 initialize from a page of `origin`, with the API key when given. */
  const initializeFrom = (origin: string, apiKey?: string) =>
    fetch(s.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_HEADERS, origin, ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }) },
      body: JSON.stringify(initializeBody('2025-11-25')),
    });
  const preflight = (path: string, origin: string) =>
    fetch(`${s.baseUrl}${path}`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-protocol-version' },
    });

  it.each(['/mcp', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/api/oauth/register'])(
    'answers the preflight of %s from a loopback and a configured origin, not from another',
    async (path) => {
      for (const origin of [PAGE, ALLOWED]) {
        const response = await preflight(path, origin);
        expect(response.status, origin).toBe(204);
        expect(response.headers.get('access-control-allow-origin')).toBe(origin);
        expect(response.headers.get('access-control-allow-methods')).toBe('GET, POST, DELETE');
        expect(response.headers.get('access-control-allow-headers')).toMatch(/Authorization.*Content-Type.*Mcp-Protocol-Version/);
        expect(response.headers.get('vary')).toContain('Origin');
      }
      const refused = await preflight(path, EVIL);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('origin_not_allowed');
    },
  );

  it('lets an allowed origin read the session id and the protocol headers of /mcp, and a 401’s challenge', async () => {
    const opened = await initializeFrom(PAGE, s.demo.apiKeys.admin);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(opened.headers.get('access-control-expose-headers')).toBe('Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After');
    expect(opened.headers.get('mcp-session-id')).toBeTruthy();

    const unauthenticated = await initializeFrom(ALLOWED);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(unauthenticated.headers.get('www-authenticate')).toMatch(/^Bearer /);

    const metadata = await fetch(`${s.baseUrl}/.well-known/oauth-protected-resource`, { headers: { origin: ALLOWED } });
    expect(metadata.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('lets a browser client register itself and read the answer; the token endpoint answers its preflight itself', async () => {
    const registered = await fetch(`${s.baseUrl}/api/oauth/register`, {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [`${PAGE}/oauth/callback`], client_name: 'Browser client', token_endpoint_auth_method: 'none' }),
    });
    expect(registered.status).toBe(201);
    expect(registered.headers.get('access-control-allow-origin')).toBe(PAGE);
    const token = await preflight('/api/oauth/token', PAGE);
    expect(token.status).toBe(204);
    expect(token.headers.get('access-control-allow-origin')).toBe(PAGE);
  });

  it('gives another origin no CORS, and /mcp still refuses it (DNS rebinding)', async () => {
    const response = await initializeFrom(EVIL, s.demo.apiKeys.admin);
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const metadata = await fetch(`${s.baseUrl}/.well-known/oauth-authorization-server`, { headers: { origin: EVIL } });
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get('access-control-allow-origin')).toBeNull();
  });
});
