import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { MCP_HEADERS } from '../mcp/support/mcp.js';
import { MCP_BODY_LIMIT_BYTES } from '../../src/mcp/limits.js';
import { expectV2Answer, expectV4Answer } from './support/fuzz.js';

/*
 * Sizes and headers no client should send: bodies past the limit, deep and wide JSON, repeated,
 * oversized and malformed credentials, CR/LF and non-UTF-8 bytes in headers (over a raw socket,
 * since fetch refuses them). Each is answered with a 4xx in the API's shape, never a crash.
 */

const MIB = 1024 * 1024;

/** Sends raw bytes as one HTTP/1.1 request and returns the status line's code and the whole answer. */
function rawRequest(port: number, head: Buffer | string, body = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    // Node 24 answers an oversized head and then resets the socket while the rest is still being sent:
    // the reset after an answer ends the exchange, it does not fail it.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET' || chunks.length === 0) reject(error);
    });
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
    socket.end(Buffer.concat([Buffer.isBuffer(head) ? head : Buffer.from(head, 'latin1'), Buffer.from(body)]));
  });
}

const bodyOf = (raw: string) => raw.slice(raw.indexOf('\r\n\r\n') + 4);

describe('limits and header abuse [pglite]', () => {
  let t: ListeningTestApp;
  let port: number;
  let adminKey: string;
  let v2Key: string;

  beforeAll(async () => {
    t = await startListeningApp('pglite');
    port = Number(new URL(t.baseUrl).port);
    adminKey = t.demo.apiKeys.admin;
    const created = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'limits', scopes: ['api.teams.create'] });
    v2Key = created.rawKey!;
  });
  afterAll(async () => t?.close());

  const post = async (url: string, payload: string, key = adminKey) => {
    const response = await t.app.inject({ method: 'POST', url, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload });
    return { status: response.statusCode, text: response.body };
  };

  it('refuses a body over 1 MiB with 413 body_too_large on v4 and v2, and on MCP', async () => {
    const huge = JSON.stringify({ name: 'x'.repeat(MIB + 10) });
    const v4 = await post('/v4/teams', huge);
    expect(v4.status).toBe(413);
    expect(JSON.parse(v4.text).error.code).toBe('body_too_large');
    const v2 = await post('/v2/teams', huge, v2Key);
    expect(v2.status).toBe(413);
    expectV2Answer(v2, {});
    const mcp = await t.app.inject({ method: 'POST', url: '/mcp', headers: { ...MCP_HEADERS, 'x-api-key': adminKey }, payload: huge });
    expect(mcp.statusCode).toBe(413);
  });

  it.each([
    ['10,000 nested arrays', `{"name":${'['.repeat(10_000)}${']'.repeat(10_000)}}`],
    ['10,000 nested objects', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
    ['60,000 keys', `{${Array.from({ length: 60_000 }, (_, i) => `"k${i}":1`).join(',')}}`],
    ['an array of 200,000 items', `{"products":[${Array.from({ length: 200_000 }, () => '1').join(',')}]}`],
    ['501 products', JSON.stringify({ products: Array.from({ length: 501 }, (_, i) => ({ serialNumber: `S${i}`, productType: 'Mice', manufacturer: 'm', model: 'm' })) })],
  ])('answers %s with a 400 in the envelope', async (_what, payload) => {
    for (const url of ['/v4/teams', '/v4/products']) {
      const answer = await post(url, payload);
      expect(answer.status).toBe(400);
      expectV4Answer(answer, {});
    }
    const v2 = await post('/v2/teams', payload, v2Key);
    expect(v2.status).toBe(400);
    expectV2Answer(v2, {});
    const mcp = await t.app.inject({ method: 'POST', url: '/mcp', headers: { ...MCP_HEADERS, 'x-api-key': adminKey }, payload });
    // MCP's own body limit is smaller: a tool call's arguments are a few kilobytes.
    expect(mcp.statusCode).toBe(Buffer.byteLength(payload) > MCP_BODY_LIMIT_BYTES ? 413 : 400);
  });

  it('refuses duplicate credentials: X-API-KEY twice, Authorization twice, or both', async () => {
    const head = (lines: string[]) => `GET /v4/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines.join('\r\n')}\r\n\r\n`;
    for (const lines of [
      [`X-API-KEY: ${adminKey}`, `X-API-KEY: ${adminKey}`],
      ['Authorization: Bearer a', 'Authorization: Bearer b'],
      [`X-API-KEY: ${adminKey}`, 'Authorization: Bearer a'],
      [`X-API-KEY: ${adminKey},${adminKey}`],
    ]) {
      const answer = await rawRequest(port, head(lines));
      expect(answer.status, lines.join(' | ')).toBe(401);
      expectV4Answer({ status: answer.status, text: bodyOf(answer.text) }, {});
    }
    const v2 = await rawRequest(port, `GET /v2/teams HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-KEY: ${v2Key}\r\nX-API-KEY: ${v2Key}\r\n\r\n`);
    expect(v2.status).toBe(401);
    expectV2Answer({ status: v2.status, text: bodyOf(v2.text) }, {});
  });

  it('answers a 64 KiB credential with 431, and a long one within the header limit with 401', async () => {
    for (const header of ['X-API-KEY', 'Authorization']) {
      const oversized = await rawRequest(port, `GET /v4/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${header}: ${'k'.repeat(64 * 1024)}\r\n\r\n`);
      expect(oversized.status).toBe(431);
    }
    const long = await t.app.inject({ method: 'GET', url: '/v4/me', headers: { 'x-api-key': `svc_sk_${'k'.repeat(8000)}` } });
    expect(long.statusCode).toBe(401);
    const v2 = await t.app.inject({ method: 'GET', url: '/v2/teams', headers: { 'x-api-key': 'k'.repeat(8000) } });
    expect(v2.statusCode).toBe(401);
  });

  it('refuses CR, LF and NUL inside header values at the parser, and never echoes an injected header', async () => {
    for (const value of [`${adminKey}\rX-Injected: 1`, `${adminKey}\nX-Injected: 1`, `${adminKey}\0`]) {
      const answer = await rawRequest(port, `GET /v4/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-KEY: ${value}\r\n\r\n`);
      expect([400, 401]).toContain(answer.status);
      expect(answer.text).not.toMatch(/^x-injected/im);
    }
    // A CRLF inside a header value over the wire ends it: what follows is a header of its own, not an injection.
    const split = await rawRequest(port, `GET /v4/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: a\r\nSet-Cookie: injected=1\r\n\r\n`);
    expect(split.status).toBe(401);
    expect(split.text).not.toMatch(/^set-cookie: injected/im);
  });

  it('answers credentials with invalid UTF-8 or Latin-1 bytes with 401', async () => {
    const head = (bytes: number[]) =>
      Buffer.concat([Buffer.from('GET /v4/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-KEY: svc_sk_', 'latin1'), Buffer.from(bytes), Buffer.from('\r\n\r\n')]);
    for (const bytes of [[0xff, 0xfe], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe9]]) {
      const answer = await rawRequest(port, head(bytes));
      expect(answer.status).toBe(401);
      expectV4Answer({ status: answer.status, text: bodyOf(answer.text) }, {});
    }
    const v2 = await rawRequest(port, Buffer.concat([Buffer.from('GET /v2/teams HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-KEY: ', 'latin1'), Buffer.from([0xff, 0xc3, 0x28, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41]), Buffer.from('\r\n\r\n')]));
    expect(v2.status).toBe(401);
  });

  // Regression: a decoded CR, LF or NUL in a v2 path param went into the Link header; Node refused it and answered a bare 500.
  it('keeps v2 path params percent-encoded in the successor Link header', async () => {
    for (const param of ['a%0D%0ASet-Cookie:%20x=1', '%00']) {
      const response = await t.app.inject({ method: 'GET', url: `/v2/teams/${param}`, headers: { 'x-api-key': v2Key } });
      expect(response.statusCode).toBe(403);
      expectV2Answer({ status: response.statusCode, text: response.body }, {});
      expect(response.headers.link).toContain(`</v4/teams/${encodeURIComponent(decodeURIComponent(param))}>`);
      expect(response.headers['set-cookie']).toBeUndefined();
    }
  });

  // Regression: malformed URLs and path segments over Fastify's limit got Fastify's own error body, not the envelope.
  it('answers malformed URLs and over-long path segments in the API’s error shape', async () => {
    for (const url of ['/v4/teams/%zz', '/v4/teams/%E0%A4%A', `/v4/teams/${'x'.repeat(200)}`]) {
      const response = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': adminKey } });
      expect(response.statusCode, url).toBeGreaterThanOrEqual(400);
      expectV4Answer({ status: response.statusCode, text: response.body }, {});
    }
    for (const url of ['/v2/teams/%zz', `/v2/teams/${'x'.repeat(200)}`]) {
      const response = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': v2Key } });
      expectV2Answer({ status: response.statusCode, text: response.body }, {});
    }
  });
});
