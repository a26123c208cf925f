import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvesOnlyToPublicAddresses } from '../../src/oauth/public-address.js';
import { AUTHORIZE_LIMITS } from '../../src/oauth/routes.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeQuery, DocumentServer, type Document } from '../oauth/support.js';

/*
 * Client metadata documents (CIMD) make the server fetch whatever URL a client_id names, before
 * anyone signs in: never from an address inside any network, at most once per failure for a while,
 * and only as fast as the authorization endpoint's rate limit lets requests in.
 */


describe('the CIMD address pre-check', () => {
  /** Each range of the IANA special-purpose registries (and the rest of what is not global unicast): its first and last address. */
  const SPECIAL: [range: string, first: string, last: string][] = [
    ['0.0.0.0/8 this network', '0.0.0.0', '0.255.255.255'],
    ['10.0.0.0/8 private', '10.0.0.0', '10.255.255.255'],
    ['100.64.0.0/10 shared', '100.64.0.0', '100.127.255.255'],
    ['127.0.0.0/8 loopback', '127.0.0.1', '127.255.255.255'],
    ['169.254.0.0/16 link-local', '169.254.0.0', '169.254.255.255'],
    ['172.16.0.0/12 private', '172.16.0.0', '172.31.255.255'],
    ['192.0.0.0/24 protocol assignments', '192.0.0.0', '192.0.0.255'],
    ['192.0.2.0/24 TEST-NET-1', '192.0.2.0', '192.0.2.255'],
    ['192.31.196.0/24 AS112', '192.31.196.0', '192.31.196.255'],
    ['192.52.193.0/24 AMT', '192.52.193.0', '192.52.193.255'],
    ['192.88.99.0/24 6to4 relay', '192.88.99.0', '192.88.99.255'],
    ['192.168.0.0/16 private', '192.168.0.0', '192.168.255.255'],
    ['192.175.48.0/24 AS112', '192.175.48.0', '192.175.48.255'],
    ['198.18.0.0/15 benchmarking', '198.18.0.0', '198.19.255.255'],
    ['198.51.100.0/24 TEST-NET-2', '198.51.100.0', '198.51.100.255'],
    ['203.0.113.0/24 TEST-NET-3', '203.0.113.0', '203.0.113.255'],
    ['224.0.0.0/4 multicast', '224.0.0.0', '239.255.255.255'],
    ['240.0.0.0/4 reserved, broadcast', '240.0.0.0', '255.255.255.255'],
    ['::/128 unspecified', '::', '::'],
    ['::1/128 loopback', '::1', '::1'],
    ['::/96 IPv4-compatible', '::7f00:1', '::ffff:ffff'],
    ['::ffff:0:0/96 IPv4-mapped, of a special-use address', '::ffff:127.0.0.1', '::ffff:a00:1'],
    ['::ffff:0:0:0/96 IPv4-translated', '::ffff:0:7f00:1', '::ffff:0:808:808'],
    ['64:ff9b::/96 NAT64', '64:ff9b::7f00:1', '64:ff9b::808:808'],
    ['64:ff9b:1::/48 NAT64 local use', '64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff'],
    ['100::/64 discard-only', '100::', '100::ffff:ffff:ffff:ffff'],
    ['100:0:0:1::/64 dummy prefix', '100:0:0:1::', '100:0:0:1:ffff:ffff:ffff:ffff'],
    ['2001::/23 IETF protocol assignments', '2001::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['2001::/32 Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['2001:db8::/32 documentation', '2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['2002::/16 6to4 (of a private address)', '2002:a00:1::1', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['2620:4f:8000::/48 AS112', '2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff'],
    ['3fff::/20 documentation', '3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['5f00::/16 segment routing', '5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['fc00::/7 unique local', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['fe80::/10 link-local', 'fe80::1%eth0', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['fec0::/10 site-local', 'fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['ff00::/8 multicast', 'ff02::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['outside 2000::/3: reserved', '1000::', '4000::'],
  ];

  it.each(SPECIAL)('refuses %s', async (_range, first, last) => {
    expect(await resolvesOnlyToPublicAddresses(first), first).toBe(false);
    expect(await resolvesOnlyToPublicAddresses(last), last).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '192.0.1.255', '192.0.3.0', '[2606:4700:4700::1111]', '[2a00:1450:4001::1]', '[::ffff:8.8.8.8]', '[2001:200::1]'])(
    'accepts the public address %s',
    async (address) => {
      expect(await resolvesOnlyToPublicAddresses(address)).toBe(true);
    },
  );

  describe('through the authorization endpoint', () => {
    let s: ListeningTestApp;
    let inside: Server;
    let connections = 0;
    beforeAll(async () => {
      inside = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => inside.listen(0, '127.0.0.1', resolve));
      s = await startListeningApp('pglite');
    });
    afterAll(async () => {
      await s?.close();
      await new Promise<void>((resolve) => inside.close(() => resolve()));
    });

    it.each(['[::7f00:1]', '[::ffff:0:7f00:1]', '[2002:7f00:1::]', '[64:ff9b::7f00:1]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]', '192.0.2.10', '[100::1]', '[2001:db8::1]', '[fec0::1]'])(
      'refuses a document at %s before connecting',
      async (host) => {
        const port = (inside.address() as { port: number }).port;
        const response = await fetch(`${s.baseUrl}/api/oauth/authorize?${authorizeQuery(`https://${host}:${port}/client.json`)}`, { redirect: 'manual' });
        expect(response.status).toBe(400);
        expect(await response.text()).toContain('invalid_client: client_id metadata document fetch not allowed');
        expect(connections).toBe(0);
      },
    );
  });
});

describe('CIMD fetches and the authorization endpoint', () => {
  let s: ListeningTestApp;
  const documents = new DocumentServer();
  beforeAll(async () => {
    await documents.start();
    s = await startListeningApp('pglite', { core: { fetchClientMetadata: documents.fetch } });
  });
  afterAll(async () => {
    await s?.close();
    await documents.close();
  });

  const authorize = async (clientId: string) => {
    const response = await fetch(`${s.baseUrl}/api/oauth/authorize?${authorizeQuery(clientId)}`, { redirect: 'manual' });
    return { status: response.status, text: await response.text() };
  };

  it.each([
    ['a 404', (): Document => ({ status: 404, body: '' })],
    ['a document taking 4 s (more than the 2.5 s allowed)', (): Document => ({ delayMs: 4000, body: '' })],
    ['a document our policy refuses', (clientId: string): Document => ({ body: { client_id: clientId, redirect_uris: ['http://app.example.com/cb'] } })],
  ])('fetches %s once per request, then not again while its failure is remembered', async (label, documentFor) => {
    const path = `/failing-${label.replace(/\W+/g, '-')}`;
    const clientId = documents.serve(path, documentFor(`https://cimd.test${path}`));
    const first = await authorize(clientId);
    expect(first.status).toBe(400);
    expect(first.text).toMatch(/invalid_client|invalid_redirect_uri/);
    expect(documents.fetched(path), label).toBe(1);
    const second = await authorize(clientId);
    expect(second).toEqual(first);
    expect(documents.fetched(path), label).toBe(1);
  });

  it('fetches a document once for requests that arrive together', async () => {
    const clientId = documents.serve('/together', { status: 404, delayMs: 300, body: '' });
    const answers = await Promise.all([1, 2, 3, 4].map(() => authorize(clientId)));
    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400]);
    expect(documents.fetched('/together')).toBe(1);
  });

  it('limits authorization requests per address, with 429 and Retry-After', async () => {
    const authorizeFrom = (ip: string) => s.app.inject({ url: `/api/oauth/authorize?${authorizeQuery('unknown-client')}`, remoteAddress: ip });
    for (let i = 0; i < AUTHORIZE_LIMITS.perIp; i++) expect((await authorizeFrom('10.9.8.7')).statusCode).toBe(400);
    const pushFrom = (ip: string) =>
      s.app.inject({
        method: 'POST',
        url: '/api/oauth/par',
        remoteAddress: ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: authorizeQuery('unknown-client'),
      });
    // Pushed authorization requests name a client too: they count against the same limit.
    for (const refused of [await authorizeFrom('10.9.8.7'), await pushFrom('10.9.8.7')]) {
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(refused.json().error.message).toContain('oauth_authorize');
    }
    expect((await authorizeFrom('10.9.8.8')).statusCode).toBe(400);
  });
});
