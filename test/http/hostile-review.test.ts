import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintKeyForUser } from '../../src/domain/admin.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { csrfOf, DEMO_PASSWORD, FormBrowser } from '../oauth/support.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

/*
 * The findings of a hostile review, each reproduced as it was found and answered now as it
 * should be. (The v2 passthrough's dot segments are in test/gateway/v2-golden.test.ts, legacy key
 * hints in test/gateway/legacy-keys.test.ts.)
 */

describe('hostile review findings', () => {
  let s: ListeningTestApp;
  const errorLines: string[] = [];
  let legacyKeyId: string;

  beforeAll(async () => {
    // Error-level lines only: a client's mistake must not log a stack as a fault of ours.
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        errorLines.push(chunk.toString());
        done();
      },
    });
    s = await startListeningApp('pglite', { core: { logger: pino({ level: 'error' }, sink) } });
    legacyKeyId = (await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'HR sync', scopes: ['api.employees.getAll'] })).id;
  });
  afterAll(() => s.close());

  describe('an admin key narrowed to inventory reads no legacy-key data', () => {
    let narrow: string;
    beforeAll(async () => {
      narrow = (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:inventory:read'], 'inventory only')).rawKey;
    });

    it.each([
      ['/v4/admin/legacy-keys', 'mcp:company:read'],
      ['/v4/admin/legacy-keys/:id', 'mcp:company:read'],
      ['/v4/admin/legacy-keys/:id/plan', 'mcp:company:read'],
      ['/v4/admin/shadow-report', 'mcp:company:read'],
    ])('GET %s needs %s', async (path, capability) => {
      const response = await fetch(`${s.baseUrl}${path.replace(':id', legacyKeyId)}`, { headers: { 'x-api-key': narrow } });
      expect(response.status).toBe(403);
      const body = (await response.json()) as { error: { code: string; details: { required: string } } };
      expect(body.error).toMatchObject({ code: 'missing_capability', details: { required: capability } });
      expect(JSON.stringify(body)).not.toContain('HR sync');
    });

    it.each([
      ['POST', '/v4/admin/legacy-keys/:id/successor', {}],
      ['POST', '/v4/admin/legacy-keys/:id/disable', { reason: 'x' }],
    ])('%s %s needs mcp:company:write', async (method, path, body) => {
      const response = await fetch(`${s.baseUrl}${path.replace(':id', legacyKeyId)}`, {
        method,
        headers: { 'x-api-key': narrow, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('missing_capability');
    });

    it('still lets an admin key holding mcp:company:read list the keys', async () => {
      const reader = (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:company:read'], 'company reader')).rawKey;
      const response = await fetch(`${s.baseUrl}/v4/admin/legacy-keys`, { headers: { 'x-api-key': reader } });
      expect(response.status).toBe(200);
    });
  });

  describe('client mistakes on /app answer 4xx, without signing in and without an error logged', () => {
    const post = (path: string, contentType: string, body: string) =>
      fetch(`${s.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body, redirect: 'manual' });

    it.each([
      ['malformed JSON', 'application/json', '{"email": ', 400],
      ['an XML body', 'application/xml', '<sign-in><email>a</email></sign-in>', 415],
      ['a 3 MB body', 'application/x-www-form-urlencoded', `email=${'a'.repeat(3 * 1024 * 1024)}`, 413],
    ])('%s', async (_case, contentType, body, status) => {
      errorLines.length = 0;
      const response = await post('/app/sign-in', contentType, body);
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toContain('text/html');
      expect(errorLines).toEqual([]);
    });

    it('a return path with CR/LF is replaced, never put in a header', async () => {
      errorLines.length = 0;
      const injected = '/app/x\r\nSet-Cookie: session=attacker';
      const browser = new FormBrowser();
      const page = await browser.follow(`${s.baseUrl}/app/sign-in?return=${encodeURIComponent(injected)}`, '\u0000');
      expect(page.response.status).toBe(200);
      const signedIn = await browser.fetch(`${s.baseUrl}/app/sign-in`, {
        form: { _csrf: csrfOf(page.html), email: s.demo.emails.admin, password: DEMO_PASSWORD, return: injected },
      });
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.get('location')).toBe('/app/developers/api-keys');
      expect(errorLines).toEqual([]);
    });
  });

  // An ops review: the documented 501 of a v2 route without a v4 successor was logged as an error, with a stack.
  it('answers a v2 route without a v4 successor with its 501, logging no error', async () => {
    const { rawKey } = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Catalog sync', scopes: ['api.catalogs.getAll'] });
    errorLines.length = 0;
    const response = await fetch(`${s.baseUrl}/v2/catalogs`, { headers: { 'x-api-key': rawKey! } });
    expect(response.status).toBe(501);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('no_v4_successor');
    expect(errorLines).toEqual([]);
  });

  it('names an unknown query field such as `constructor` as itself, not as a property of Object', async () => {
    const response = await fetch(`${s.baseUrl}/v4/employees?constructor=x`, { headers: { 'x-api-key': s.demo.apiKeys.admin } });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; details: { field: string; message: string }[] } };
    expect(body.error.details).toEqual([{ field: 'constructor', rule: 'unknown_field', message: 'unknown field' }]);
    expect(body.error.message).not.toContain('function');
  });

  describe('MCP sessions per principal', () => {
    let limited: ListeningTestApp;
    beforeAll(async () => {
      limited = await startListeningApp('pglite', { config: { mcpSessionsPerHour: 3 } });
    });
    afterAll(() => limited.close());

    const initialize = (apiKey: string) =>
      fetch(limited.mcpUrl, {
        method: 'POST',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
      });

    it('are bounded: past MCP_SESSIONS_PER_HOUR a principal gets 429 with Retry-After, others are unaffected', async () => {
      for (let i = 0; i < 3; i++) expect((await initialize(limited.demo.apiKeys.admin)).status).toBe(200);
      const refused = await initialize(limited.demo.apiKeys.admin);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { data: { code: 'rate_limited' } } });
      expect((await initialize(limited.demo.apiKeys.manager)).status).toBe(200);
    });
  });
});
