import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGISTRATION_LIMITS } from '../../src/oauth/client-policy.js';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeQuery, DocumentServer, register } from '../oauth/support.js';

/*
 * What anyone may register without signing in (RFC 7591 registration, and client metadata documents
 * named by a client_id URL): nothing that makes the server connect anywhere, nothing large, and only
 * the redirect URIs of real MCP clients.
 */

/** A CIMD document for `clientId` with a loopback redirect, and `extra` metadata. */
function document(clientId: string, extra: Record<string, unknown> = {}) {
  return { client_id: clientId, client_name: 'Doc client', redirect_uris: ['http://localhost/callback'], token_endpoint_auth_method: 'none', ...extra };
}

describe.each(backends())('OAuth registration [%s]', (backend) => {
  let s: ListeningTestApp;
  const documents = new DocumentServer();
  /** Something listening inside the network: registration must never connect to it. */
  let inside: Server;
  let connections = 0;
  let insideUrl = '';

  beforeAll(async () => {
    inside = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => inside.listen(0, '127.0.0.1', resolve));
    insideUrl = `https://127.0.0.1:${(inside.address() as { port: number }).port}`;
    await documents.start();
    // The test fetch lets loopback through (it drops oidc-provider's connect-time guard): any fetch would connect.
    s = await startListeningApp(backend, { core: { fetchClientMetadata: documents.fetch } });
  });
  afterAll(async () => {
    await s?.close();
    await documents.close();
    await new Promise<void>((resolve) => inside.close(() => resolve()));
  });

  /** The authorization endpoint's answer to a request from the client a document describes. */
  async function authorize(clientId: string): Promise<{ status: number; text: string }> {
    const response = await fetch(`${s.baseUrl}/api/oauth/authorize?${authorizeQuery(clientId)}`, { redirect: 'manual' });
    return { status: response.status, text: await response.text() };
  }

  const storedClients = async () => (await s.core.db.query<{ n: number }>(sql`SELECT count(*)::int AS n FROM oauth_records WHERE kind = 'Client'`))[0]!.n;

  describe('unauthenticated SSRF through registration', () => {
    const fetchingFields = (at: string): [string, unknown][] => [
      ['sector_identifier_uri', `${at}/sector.json`],
      ['jwks_uri', `${at}/jwks.json`],
      ['request_uris', [`${at}/request.jwt`]],
      ['backchannel_logout_uri', `${at}/logout`],
      ['backchannel_client_notification_endpoint', `${at}/notify`],
    ];

    it('refuses every field that would make the server fetch, naming it, and connects nowhere', async () => {
      const before = await storedClients();
      for (const [field, value] of fetchingFields(insideUrl)) {
        const answer = await register(s.baseUrl, { client_name: 'fetcher', redirect_uris: ['https://app.example.com/cb'], [field]: value });
        expect(answer.status, field).toBe(400);
        expect(answer.body.error, field).toBe('invalid_client_metadata');
        expect(answer.body.error_description, field).toContain(`${field} is not accepted`);
      }
      expect(connections).toBe(0);
      expect(await storedClients()).toBe(before);
    });

    it('refuses a client metadata document carrying one, and connects nowhere', async () => {
      for (const [field, value] of fetchingFields(insideUrl)) {
        const clientId = documents.serve(`/ssrf-${field}`, { body: document(`https://cimd.test/ssrf-${field}`, { [field]: value }) });
        const answer = await authorize(clientId);
        expect(answer.status, field).toBe(400);
        expect(answer.text, field).toContain(`invalid_client_metadata: ${field} is not accepted`);
      }
      expect(connections).toBe(0);
    });
  });

  describe('registration costs too much', () => {
    const { bodyBytes, arrayMembers, uriLength, textLength } = REGISTRATION_LIMITS;
    const uri = (i: number) => `https://app.example.com/cb/${i}`;

    it(`refuses a body over ${bodyBytes} bytes with 413, before reading it`, async () => {
      const before = await storedClients();
      const many = Array.from({ length: 20_000 }, (_, i) => uri(i));
      for (const metadata of [{ redirect_uris: many }, { redirect_uris: [uri(0)], client_name: 'x'.repeat(900_000) }]) {
        const answer = await register(s.baseUrl, metadata);
        expect(answer.status).toBe(413);
        expect(answer.body).toEqual({ error: 'invalid_client_metadata', error_description: expect.stringContaining(`exceeds ${bodyBytes} bytes`) });
      }
      expect(await storedClients()).toBe(before);
    });

    it.each([
      ['redirect_uris', { redirect_uris: Array.from({ length: arrayMembers + 1 }, (_, i) => uri(i)) }, `at most ${arrayMembers}`],
      ['contacts', { contacts: Array.from({ length: arrayMembers + 1 }, (_, i) => `a${i}@example.com`) }, `at most ${arrayMembers}`],
      ['redirect_uris', { redirect_uris: [`https://app.example.com/${'p'.repeat(uriLength)}`] }, `at most ${uriLength} are accepted`],
      ['logo_uri', { logo_uri: `https://app.example.com/${'p'.repeat(uriLength)}` }, `at most ${uriLength} are accepted`],
      ['client_name', { client_name: 'n'.repeat(textLength + 1) }, `at most ${textLength} are accepted`],
      ['software_version', { software_version: 'v'.repeat(textLength + 1) }, `at most ${textLength} are accepted`],
    ])('refuses %s over its limit, naming the field and the limit', async (field, metadata, limit) => {
      const answer = await register(s.baseUrl, { redirect_uris: [uri(0)], ...metadata });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toBe('invalid_client_metadata');
      expect(answer.body.error_description).toMatch(new RegExp(`^${field} .*${limit}`));
    });

    it('accepts a registration at every limit', async () => {
      const metadata = {
        client_name: 'n'.repeat(textLength),
        redirect_uris: [...Array.from({ length: arrayMembers - 1 }, (_, i) => uri(i)), `https://app.example.com/${'p'.repeat(uriLength - 24)}`],
      };
      expect(metadata.redirect_uris.at(-1)).toHaveLength(uriLength);
      const answer = await register(s.baseUrl, metadata);
      expect(answer.status).toBe(201);
      expect(answer.body.redirect_uris).toHaveLength(arrayMembers);
    });

    it('applies the same limits to a client metadata document', async () => {
      const tooMany = Array.from({ length: arrayMembers + 1 }, (_, i) => `http://localhost/cb/${i}`);
      const clientId = documents.serve('/too-many-redirects', { body: document('https://cimd.test/too-many-redirects', { redirect_uris: tooMany }) });
      const answer = await authorize(clientId);
      expect(answer.status).toBe(400);
      expect(answer.text).toContain(`invalid_client_metadata: redirect_uris has ${arrayMembers + 1} members; at most ${arrayMembers} are accepted`);
    });
  });

  describe('the redirect-URI policy', () => {
    it.each([
      'https://claude.ai/api/mcp/auth_callback',
      'http://localhost:52814/callback',
      'http://127.0.0.1/',
      'http://[::1]:8080/cb',
      'cursor://anysphere.cursor-mcp/oauth/callback',
      'vscode://vscode.github-authentication/did-authenticate',
      'vscode-insiders://vscode.github-authentication/did-authenticate',
      'windsurf://codeium.windsurf/oauth/callback',
      'claude://claude.ai/oauth/callback',
      'com.example.app:/oauth2redirect',
    ])('accepts %s', async (redirectUri) => {
      expect((await register(s.baseUrl, { redirect_uris: [redirectUri] })).status).toBe(201);
    });

    it.each([
      ['ws://localhost/cb', 'reverse-domain form'],
      ['ftp://example.com/cb', 'reverse-domain form'],
      ['jar:https://example.com/a.jar!/cb', 'reverse-domain form'],
      ['view-source:https://example.com/cb', 'reverse-domain form'],
      ['chrome-extension://abcdef/cb', 'reverse-domain form'],
      ['http+evil://localhost/cb', 'reverse-domain form'],
      ['javascript:alert(1)', 'reverse-domain form'],
      ['https:///cb', 'must name a host'],
      ['https:/cb', 'must name a host'],
      ['http://evil.example@localhost/cb', 'must not contain user info'],
      ['https://user:pass@app.example.com/cb', 'must not contain user info'],
      ['http://app.example.com/cb', 'plain http is allowed only on localhost'],
      ['https://app.example.com/cb#x', 'must not contain a fragment'],
      ['https://app.example.com/c b', 'must not contain spaces'],
    ])('refuses %s with invalid_redirect_uri naming the rule', async (redirectUri, rule) => {
      const answer = await register(s.baseUrl, { redirect_uris: [redirectUri] });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toBe('invalid_redirect_uri');
      expect(answer.body.error_description).toContain(redirectUri);
      expect(answer.body.error_description).toContain(rule);
    });
  });
});
