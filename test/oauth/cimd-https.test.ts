import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freshDataDir, ServerProcess } from '../helpers/server-process.js';
import { bridgeToService, makeCertificates, namespaceLauncher, PUBLIC_ADDRESS, writeDocuments, writeHosts } from './cimd-network/network.js';
import { authorizeInBrowser, FormBrowser, MemoryOAuthProvider } from './support.js';

/*
 * Client ID Metadata Documents end to end, the way production fetches them: the service is a
 * `svc-server serve` process with nothing configured for the test, and fetches the document over
 * https, through oidc-provider's fetch and both SSRF checks, from a host name the system resolver
 * maps to a public address, trusting the certificate by a CA given in NODE_EXTRA_CA_CERTS. The
 * name, the address and the https host live in a network namespace of the service's own
 * (test/oauth/cimd-network/). The SDK client authorizes with the document's URL as its client_id
 * and calls a tool.
 */

const CLIENT_HOST = 'mcp-client.cimd.example';
/** A host the namespace's resolver maps to loopback: its document must never be fetched. */
const LOOPBACK_HOST = 'loopback.cimd.example';
const REDIRECT_URL = 'http://127.0.0.1:47199/oauth/callback';
const documentUrl = (host: string) => `https://${host}/oauth/client-metadata.json`;

function clientDocument(clientId: string) {
  return {
    client_id: clientId,
    client_name: 'CIMD https client',
    redirect_uris: [REDIRECT_URL],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

describe('client ID metadata documents over real https, fetched as in production', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cimd-https-'));
  let server: ServerProcess;
  let bridge: { close(): Promise<void> };
  let baseUrl = '';

  beforeAll(async () => {
    const { caFile } = makeCertificates(dir, [CLIENT_HOST, LOOPBACK_HOST]);
    writeHosts(dir, { [CLIENT_HOST]: PUBLIC_ADDRESS, [LOOPBACK_HOST]: '127.0.0.1' });
    writeDocuments(dir, {
      [documentUrl(CLIENT_HOST)]: clientDocument(documentUrl(CLIENT_HOST)),
      [documentUrl(LOOPBACK_HOST)]: clientDocument(documentUrl(LOOPBACK_HOST)),
    });
    server = await ServerProcess.start(
      ['--demo', '--data-dir', freshDataDir()],
      { DATABASE_URL: '', REDIS_URL: '', SVC_SECRET_KEY: '', PUBLIC_BASE_URL: '', NODE_EXTRA_CA_CERTS: caFile, SVC_TEST_CIMD_DIR: dir },
      { launcher: namespaceLauncher(dir), startupMs: 120_000 },
    );
    baseUrl = server.summary.url;
    bridge = await bridgeToService(dir, Number(new URL(baseUrl).port));
  }, 150_000);
  afterAll(async () => {
    await bridge?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What the document server saw: `connection to <address>` and `GET <url>` lines. */
  const documentServerLog = () => readFileSync(join(dir, 'requests.log'), { encoding: 'utf8', flag: 'a+' }).split('\n').filter(Boolean);

  it('the SDK client, named by its document, authorizes through the pages and calls a tool; the document came over https', async () => {
    const mcpUrl = new URL('/mcp', baseUrl);
    const provider = new MemoryOAuthProvider(REDIRECT_URL, documentUrl(CLIENT_HOST));
    const client = new Client({ name: 'cimd-https', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }))).rejects.toBeInstanceOf(UnauthorizedError);
    // The server advertised CIMD, so the client sent its document's URL instead of registering.
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(documentUrl(CLIENT_HOST));

    const { callback, consentHtml } = await authorizeInBrowser(new FormBrowser(), provider.authorizationUrl!.href, REDIRECT_URL);
    expect(consentHtml).toContain(`<strong>${CLIENT_HOST}</strong> (calls itself “CIMD https client”)`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await first.finishAuth(callback.searchParams.get('code')!);

    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(whoami.structuredContent)).toContain('admin@demo.example');
    await client.close();
    expect(documentServerLog()).toEqual([`connection to ${PUBLIC_ADDRESS}`, `GET ${documentUrl(CLIENT_HOST)}`]);
  });

  it('refuses the same document on a host that resolves to loopback, without connecting to it', async () => {
    const url = new URL('/api/oauth/authorize', baseUrl);
    url.search = new URLSearchParams({
      client_id: documentUrl(LOOPBACK_HOST),
      redirect_uri: REDIRECT_URL,
      response_type: 'code',
      scope: 'mcp:orders:read',
      state: 'loopback',
      resource: new URL('/mcp', baseUrl).href,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString();
    const response = await fetch(url, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('invalid_client');
    expect(documentServerLog().filter((line) => line.includes('127.0.0.1') || line.includes(LOOPBACK_HOST))).toEqual([]);
  });
});
