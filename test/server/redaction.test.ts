import { randomBytes, randomInt } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createLogger } from '../../src/app/base-services.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { baseApp } from '../../src/app/base-app.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * The production logger (createLogger) at trace level, written to a buffer, while callers send every
 * kind of secret the service meets: API keys (valid, unknown, legacy), bearer tokens, cookies,
 * passwords, PINs, OAuth codes and refresh tokens, in headers, bodies and query strings, on answered
 * and failed requests. No log line may contain any of them.
 */

const token = (label: string) => `${label}${randomBytes(18).toString('base64url')}`;
// 12 digits, the longest PIN: no timestamp or id in a log line will contain it by chance.
const pin = () => String(randomInt(100_000, 999_999)) + String(randomInt(100_000, 999_999));

describe('log redaction', () => {
  const lines: string[] = [];
  const secrets = new Map<string, string>();
  const secret = (label: string, value: string) => {
    secrets.set(label, value);
    return value;
  };
  let t: TestApp;

  beforeAll(async () => {
    const logs = new PassThrough();
    logs.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    const logger = createLogger(loadConfig({}, { logLevel: 'trace', dataDir: 'memory://' }), logs);
    t = await startTestApp('pglite', { core: { logger }, config: { logLevel: 'trace' } });
  });
  afterAll(() => t.close());

  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string> = {}, payload?: string | object) =>
    t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

  it('never writes an API key, token, code, cookie, password or PIN', async () => {
    const admin = secret('admin API key', t.demo.apiKeys.admin);
    const { rawKey, id: legacyKeyId } = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'redaction test',
      scopes: ['api.employees.getAll'],
    });
    const legacy = secret('legacy key', rawKey!);

    // API keys in headers: valid, unknown, legacy on v4 (refused) and on v2 (served).
    expect((await send('GET', '/v4/employees', { 'x-api-key': admin })).statusCode).toBe(200);
    expect((await send('GET', '/v4/employees', { 'x-api-key': secret('unknown key', `svc_sk_zzzzzzzz_${token('')}`) })).statusCode).toBe(401);
    expect((await send('GET', '/v4/employees', { 'x-api-key': legacy })).statusCode).toBe(401);
    expect((await send('GET', '/v2/employees', { 'x-api-key': legacy })).statusCode).toBe(200);
    // Bearer tokens: an ID-token-shaped one and an API key sent as bearer.
    expect((await send('GET', '/v4/employees', { authorization: `Bearer ${secret('bearer', `eyJ${token('')}.eyJ${token('')}.${token('')}`)}` })).statusCode).toBe(401);
    expect((await send('GET', '/v4/employees', { authorization: `Bearer ${admin}` })).statusCode).toBe(401);
    expect((await send('POST', '/mcp', { authorization: `Bearer ${secret('MCP token', token('at_'))}`, 'content-type': 'application/json' }, { jsonrpc: '2.0', id: 1, method: 'initialize' })).statusCode).toBe(401);

    // PINs in bodies: stored, refused by validation, and on a product registration.
    const productId = t.demo.devices.evePhone;
    expect((await send('POST', '/v4/products/pin-code', { 'x-api-key': admin }, { productId, pinCode: secret('PIN', pin()) })).statusCode).toBe(200);
    await send('POST', '/v4/products/pin-code', { 'x-api-key': admin }, { productId, pinCode: secret('bad PIN', `${pin()}x`) });
    await send('POST', '/v4/products', { 'x-api-key': admin }, { name: 'Laptop', pinCode: secret('registration PIN', pin()) });

    // Passwords and cookies on the sign-in pages.
    const cookie = secret('session cookie', token('s_'));
    await send('POST', '/app/sign-in', { ...formHeaders, cookie: `svc_session=${cookie}; svc_csrf=${secret('csrf cookie', token('c_'))}` }, form({ email: 'admin@demo.example', password: secret('password', token('pw_')) }));
    await send('GET', '/app/developers/api-keys', { cookie: `svc_session=${cookie}` });

    // OAuth: codes, verifiers, refresh tokens and client secrets in form bodies.
    await send('POST', '/api/oauth/token', formHeaders, form({ grant_type: 'authorization_code', code: secret('OAuth code', token('code_')), code_verifier: secret('PKCE verifier', token('v_')), client_id: 'unknown', redirect_uri: 'http://127.0.0.1:9/cb' }));
    await send('POST', '/api/oauth/token', formHeaders, form({ grant_type: 'refresh_token', refresh_token: secret('refresh token', token('rt_')), client_id: 'unknown', client_secret: secret('client secret', token('cs_')) }));
    await send('POST', '/api/oauth/revoke', formHeaders, form({ token: secret('revoked token', token('rv_')), client_id: 'unknown' }));

    // Secrets in query strings, which Fastify logs with the URL.
    await send('GET', `/v4/employees?api_key=${secret('query API key', token('q_'))}&limit=1`);
    await send('GET', `/api/oauth/authorize?client_id=x&code=${secret('query code', token('qc_'))}&state=s`);
    await send('GET', `/app/sign-in?access_token=${secret('query access token', token('qa_'))}&refresh_token=${secret('query refresh token', token('qr_'))}&password=${secret('query password', token('qp_'))}&pinCode=${secret('query PIN', pin())}`);
    await send('GET', `/v2/employees?token=${secret('query token', token('qt_'))}`, { 'x-api-key': legacy });
    await send('GET', `/nowhere?client_secret=${secret('query client secret', token('qs_'))}`);

    // A failure whose error carries the request it was serving, as HTTP client errors do: a 500, logged with the error.
    const probe = baseApp(t.core);
    probe.post('/probe/fail', async (request) => {
      throw Object.assign(new Error('upstream refused the call'), { headers: request.headers, body: request.body });
    });
    const failed = await probe.inject({
      method: 'POST',
      url: `/probe/fail?code=${secret('query code on a 500', token('qf_'))}`,
      headers: { 'x-api-key': admin, authorization: `Bearer ${secrets.get('bearer')!}`, cookie: `svc_session=${cookie}` },
      payload: { password: secrets.get('password')!, pinCode: secrets.get('PIN')!, refresh_token: secrets.get('refresh token')! },
    });
    expect(failed.statusCode).toBe(500);
    await probe.close();

    // The logs did record all this (or the test would prove nothing)…
    type Logged = { msg?: string; req?: { url?: string }; err?: Record<string, unknown>; caller?: { apiKeyId?: string; legacyKeyId?: string } };
    const logged = lines.map((line) => JSON.parse(line) as Logged);
    expect(logged.filter((line) => line.msg === 'request completed').length).toBeGreaterThanOrEqual(20);
    expect(logged.some((line) => line.req?.url === '/v4/employees?api_key=[redacted]&limit=1')).toBe(true);
    // The callers are named by their keys' ids, which are not secrets.
    expect(logged.some((line) => line.caller?.apiKeyId === admin.split('_')[2])).toBe(true);
    expect(logged.some((line) => line.caller?.legacyKeyId === legacyKeyId)).toBe(true);
    const failure = logged.find((line) => line.msg === 'request failed');
    expect(failure?.err).toMatchObject({
      message: 'upstream refused the call',
      headers: { 'x-api-key': '[redacted]', authorization: '[redacted]', cookie: '[redacted]' },
      body: { password: '[redacted]', pinCode: '[redacted]', refresh_token: '[redacted]' },
    });
    // …and no secret is in any line.
    const leaks = [...secrets].filter(([, value]) => lines.some((line) => line.includes(value))).map(([label]) => label);
    expect(leaks).toEqual([]);
  });
});
