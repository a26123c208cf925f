import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createLogger } from '../../src/app/base-services.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { baseApp } from '../../src/app/base-app.js';
import { createLogOutput } from '../../src/kit/log-output.js';
import { EVENTUALLY, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { authorizeQuery, register } from '../oauth/support.js';

/*
 * The request line is written straight to the logger's stream (not through pino's per-line path),
 * request.log is made on first use, and the output gathers lines into batches: the line must still
 * read as pino writes it, hold the client's address, and every line must arrive. It names the error
 * code of an error answer and the caller's ids, never a credential.
 */

interface Line {
  level: number;
  time: number;
  pid: number;
  hostname: string;
  msg: string;
  reqId?: string;
  req?: { method: string; url: string; host: string; remoteAddress: string; remotePort: number };
  res?: { statusCode: number; errorCode?: string };
  caller?: { userId?: string; companyIds?: string[]; apiKeyId?: string; legacyKeyId?: string; oauthClientId?: string };
  responseTime?: number;
  err?: { message: string; headers?: Record<string, string> };
}

async function startLogged(level: 'info' | 'warn'): Promise<{ app: ListeningTestApp; lines: Line[] }> {
  const lines: Line[] = [];
  const logs = new PassThrough();
  logs.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line)));
  const logger = createLogger(loadConfig({}, { logLevel: level, dataDir: 'memory://' }), logs);
  const app = await startListeningApp('pglite', { core: { logger }, config: { logLevel: level } });
  return { app, lines };
}

describe('request log', () => {
  let info: { app: ListeningTestApp; lines: Line[] };
  let warn: { app: ListeningTestApp; lines: Line[] };

  beforeAll(async () => {
    [info, warn] = await Promise.all([startLogged('info'), startLogged('warn')]);
  });
  afterAll(async () => {
    await Promise.all([info?.app.close(), warn?.app.close()]);
  });

  it('writes one line per request at info, as pino does, with the client address and secret query values masked', async () => {
    const { app, lines } = info;
    const before = Date.now();
    const response = await fetch(`${app.baseUrl}/v4/employees/${app.demo.employees.dana}?token=s3cret-value`, {
      headers: { 'x-api-key': app.demo.apiKeys.admin },
    });
    await response.arrayBuffer();
    const reqId = response.headers.get('x-request-id')!;
    await expect.poll(() => lines.filter((line) => line.reqId === reqId)).toHaveLength(1);
    const line = lines.find((l) => l.reqId === reqId)!;
    expect(Object.keys(line)).toEqual(['level', 'time', 'pid', 'hostname', 'reqId', 'req', 'res', 'caller', 'responseTime', 'msg']);
    expect(line).toMatchObject({
      level: 30,
      pid: process.pid,
      hostname: hostname(),
      msg: 'request completed',
      req: { method: 'GET', url: `/v4/employees/${app.demo.employees.dana}?token=[redacted]`, host: new URL(app.baseUrl).host, remoteAddress: '127.0.0.1' },
      res: { statusCode: response.status },
    });
    expect(line.time).toBeGreaterThanOrEqual(before);
    expect(line.time).toBeLessThanOrEqual(Date.now());
    expect(line.req!.remotePort).toBeGreaterThan(0);
    expect(line.responseTime).toBeGreaterThan(0);
    // The same prefix as a line pino writes itself.
    const started = lines.find((l) => l.msg.startsWith('Server listening'))!;
    expect(Object.keys(started).slice(0, 4)).toEqual(['level', 'time', 'pid', 'hostname']);
  });

  /** Sends `path` to the info-level app; its answer's status and error code (if any) and its completion line. */
  async function answerAndLine(path: string, init: RequestInit = {}) {
    const { app, lines } = info;
    const response = await fetch(`${app.baseUrl}${path}`, init);
    const text = await response.text();
    const code = response.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as { error?: { code?: string } }).error?.code : undefined;
    const reqId = response.headers.get('x-request-id')!;
    await expect.poll(() => lines.some((line) => line.reqId === reqId && line.msg === 'request completed')).toBe(true);
    return { status: response.status, code, text, line: lines.find((line) => line.reqId === reqId && line.msg === 'request completed')! };
  }

  it("names an error answer's code on its line: 401, 403, 404", async () => {
    const { demo } = info.app;
    const unknownKey = `svc_sk_zzzzzzzz_${'x'.repeat(43)}`;
    const employeeKey = { 'x-api-key': demo.apiKeys.employee };
    const answers = [
      await answerAndLine('/v4/employees'),
      await answerAndLine('/v4/employees', { headers: { 'x-api-key': unknownKey } }),
      await answerAndLine(`/v4/employees/${demo.employees.eve}`, { method: 'PATCH', headers: { ...employeeKey, 'content-type': 'application/json' }, body: '{"jobTitle":"CEO"}' }),
      await answerAndLine(`/v4/employees/${demo.employees.erik}`, { headers: employeeKey }),
      await answerAndLine('/no/such/route'),
    ];
    expect(answers.map(({ status, code }) => [status, code])).toEqual([
      [401, 'unauthenticated'],
      [401, 'invalid_api_key'],
      [403, 'missing_capability'],
      [404, 'not_found'],
      [404, 'route_not_found'],
    ]);
    for (const { status, code, line } of answers) expect(line.res).toEqual({ statusCode: status, errorCode: code });
    // Refused before anyone is known: no caller, and never the key that was tried.
    expect(answers[1]!.line.caller).toBeUndefined();
    expect(JSON.stringify(answers[1]!.line)).not.toContain(unknownKey);
    // The employee was authenticated, then refused: the line says who.
    expect(answers[2]!.line.caller).toMatchObject({ userId: demo.users.employee, apiKeyId: demo.apiKeys.employee.split('_')[2] });
  });

  it("names the caller on its line: the v4 key's id, the user and companies; for v2, the legacy key's id; never a key", async () => {
    const { app } = info;
    const adminKey = app.demo.apiKeys.admin;
    const me = await answerAndLine('/v4/me', { headers: { 'x-api-key': adminKey } });
    expect(me.status).toBe(200);
    expect(me.line.caller).toEqual({ userId: app.demo.users.admin, companyIds: [app.demo.companies.acme, app.demo.companies.globex].sort(), apiKeyId: adminKey.split('_')[2] });
    expect(JSON.stringify(me.line)).not.toContain(adminKey);

    const legacy = await createLegacyKey(app.core, app.core.mappings, { companyId: app.demo.companies.acme, name: 'request log', scopes: ['api.employees.getAll'] });
    const legacyKey = { 'x-api-key': legacy.rawKey! };
    const served = await answerAndLine('/v2/employees', { headers: legacyKey });
    const refused = await answerAndLine(`/v2/employees/${app.demo.employees.eve}`, { headers: legacyKey });
    expect([served.status, refused.status, refused.code]).toEqual([200, 403, 'missing_scope']);
    for (const { line } of [served, refused]) {
      expect(line.caller).toEqual({ legacyKeyId: legacy.id, userId: legacy.bridgeUserId, companyIds: [app.demo.companies.acme] });
      expect(JSON.stringify(line)).not.toContain(legacy.rawKey!);
    }
    expect(refused.line.res).toEqual({ statusCode: 403, errorCode: 'missing_scope' });
  });

  it("names the OAuth error code of the authorization server's refusals on their line", async () => {
    const { app } = info;
    const form = (fields: Record<string, string>): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const registered = await register(app.baseUrl, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'] });
    expect(registered.status).toBe(201);
    const exchange = { grant_type: 'authorization_code', code: 'no-such-code', redirect_uri: redirectUri, code_verifier: 'v'.repeat(43) };
    const unknownClient = await answerAndLine('/api/oauth/token', form({ ...exchange, client_id: 'no-such-client' }));
    const unknownCode = await answerAndLine('/api/oauth/token', form({ ...exchange, client_id: registered.body.client_id as string }));
    // No client to redirect to: the refusal is a page.
    const page = await answerAndLine(`/api/oauth/authorize?${authorizeQuery('no-such-client')}`, { headers: { accept: 'text/html' } });
    expect([unknownClient.status, unknownCode.status, page.status]).toEqual([401, 400, 400]);
    expect([JSON.parse(unknownClient.text).error, JSON.parse(unknownCode.text).error, /<p>(\w+):/.exec(page.text)?.[1]]).toEqual(['invalid_client', 'invalid_grant', 'invalid_client']);
    expect(unknownClient.line.res).toEqual({ statusCode: 401, errorCode: 'invalid_client' });
    expect(unknownCode.line.res).toEqual({ statusCode: 400, errorCode: 'invalid_grant' });
    expect(page.line.res).toEqual({ statusCode: 400, errorCode: 'invalid_client' });
    // An answer that is no refusal names no code.
    const discovery = await answerAndLine('/.well-known/oauth-authorization-server');
    expect(discovery.line.res).toEqual({ statusCode: 200 });
  });

  it("names the code of the MCP endpoint's refusals on their line, as the refusal's error.data.code", async () => {
    const { app } = info;
    const key = { 'x-api-key': app.demo.apiKeys.admin };
    const both = { accept: 'application/json, text/event-stream' };
    const json = { 'content-type': 'application/json' };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const post = (headers: Record<string, string>, body = list) => answerAndLine('/mcp', { method: 'POST', headers, body });
    const refusals = [
      { expected: [401, 'unauthenticated'], answer: await post({ ...both, ...json }) },
      { expected: [403, 'origin_not_allowed'], answer: await post({ ...key, ...both, ...json, origin: 'https://elsewhere.example' }) },
      { expected: [406, 'not_acceptable'], answer: await post({ ...key, accept: 'application/json', ...json }) },
      { expected: [415, 'unsupported_media_type'], answer: await post({ ...key, ...both, 'content-type': 'application/xml' }) },
      { expected: [400, 'session_id_required'], answer: await post({ ...key, ...both, ...json }) },
      { expected: [404, 'session_not_found'], answer: await post({ ...key, ...both, ...json, 'mcp-session-id': 'no-such-session' }) },
    ];
    for (const { expected, answer } of refusals) {
      expect([answer.status, (JSON.parse(answer.text) as { error: { data?: { code?: string } } }).error.data?.code]).toEqual(expected);
      expect(answer.line.res).toEqual({ statusCode: expected[0], errorCode: expected[1] });
    }
    // A refusal the SDK answers itself (a 2026-07-28 request without its _meta envelope) is named by its status.
    const sdk = await post({ ...key, ...both, ...json, 'mcp-protocol-version': '2026-07-28' });
    expect(sdk.status).toBe(400);
    expect(sdk.line.res).toEqual({ statusCode: 400, errorCode: 'invalid_mcp_request' });
  });

  it('writes no request line below its level', async () => {
    const { app, lines } = warn;
    const response = await fetch(`${app.baseUrl}/healthz`);
    expect(response.status).toBe(200);
    const failed = await fetch(`${app.baseUrl}/v4/employees`);
    expect(failed.status).toBe(401);
    // A line logged after both answers: once it is out, a request line written at either answer would be too.
    app.core.logger.warn('after both requests');
    await vi.waitFor(() => expect(lines.some((line) => line.msg === 'after both requests')).toBe(true), EVENTUALLY);
    expect(lines.filter((line) => line.msg === 'request completed')).toEqual([]);
  });

  it('request.log carries the request id, redacts, and skips levels that are off', async () => {
    const { app, lines } = info;
    const probe = baseApp(app.core);
    probe.get('/probe/logs', async (request) => {
      request.log.debug('not at info');
      request.log.warn({ err: Object.assign(new Error('upstream said no'), { headers: { 'x-api-key': 'svc_sk_probe_secret' } }) }, 'probe warning');
      request.log.child({ step: 'inner' }).info('inner step');
      return { ok: true };
    });
    const response = await probe.inject({ url: '/probe/logs' });
    await probe.close();
    const reqId = response.headers['x-request-id'];
    await expect.poll(() => lines.filter((line) => line.reqId === reqId).map((line) => line.msg)).toEqual(['probe warning', 'inner step', 'request completed']);
    const warning = lines.find((line) => line.reqId === reqId && line.msg === 'probe warning')!;
    expect(warning.level).toBe(40);
    expect(warning.err).toMatchObject({ message: 'upstream said no', headers: { 'x-api-key': '[redacted]' } });
    expect(lines.find((line) => line.reqId === reqId && line.msg === 'inner step')).toMatchObject({ step: 'inner', level: 30 });
  });
});

describe('log output', () => {
  const file = () => join(mkdtempSync(join(tmpdir(), 'log-output-')), 'out.log');

  it('writes every line in order, gathered into batches, without waiting for an end', async () => {
    const path = file();
    const fd = openSync(path, 'w');
    const output = createLogOutput(1024 * 1024, fd);
    for (let i = 0; i < 5; i++) output.write(`{"n":${i}}\n`);
    // Gathered, not yet written: one write for the batch.
    expect(readFileSync(path, 'utf8')).toBe('');
    await expect.poll(() => readFileSync(path, 'utf8'), { timeout: 10_000 }).toBe([0, 1, 2, 3, 4].map((n) => `{"n":${n}}\n`).join(''));
    await output.end(1000);
  });

  it('counts every line of a batch the reader has no room for as dropped', async () => {
    const path = file();
    const output = createLogOutput(100, openSync(path, 'w'));
    for (let i = 0; i < 3; i++) output.write(`{"n":${i},"pad":"${'x'.repeat(40)}"}\n`);
    await output.end(1000);
    // Three lines of 55 bytes, gathered into one batch over the 100-byte bound: dropped whole, counted as three.
    expect(readFileSync(path, 'utf8')).toBe('');
    const counted = (await output.droppedLines.get()).values.find((v) => v.labels.reason === 'buffer_full');
    expect(counted?.value).toBe(3);
  });

  it('writes a full batch at once and the rest at end()', async () => {
    const path = file();
    const fd = openSync(path, 'w');
    const output = createLogOutput(1024 * 1024, fd);
    const line = `{"pad":"${'x'.repeat(1000)}"}\n`;
    for (let i = 0; i < 40; i++) output.write(line);
    await output.end(1000);
    expect(readFileSync(path, 'utf8')).toBe(line.repeat(40));
  });

  it('writes lines of any script and any length intact, in order', async () => {
    const path = file();
    const output = createLogOutput(1024 * 1024, openSync(path, 'w'));
    // Two, three and four UTF-8 bytes per character, lines near a batch's bound and past it, between short ones.
    const lines = [
      '{"city":"Torstraße","name":"Zoë"}\n',
      `{"pad":"${'€'.repeat(5459)}"}\n`,
      `{"emoji":"${'🚚'.repeat(3000)}"}\n`,
      `{"pad":"${'x'.repeat(40_000)}"}\n`,
      '{"n":1}\n',
      `{"ja":"${'配送'.repeat(2000)}"}\n`,
    ];
    for (let round = 0; round < 3; round++) for (const line of lines) output.write(line);
    await output.end(1000);
    expect(readFileSync(path, 'utf8')).toBe(lines.join('').repeat(3));
  });
});
