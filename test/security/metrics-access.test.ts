import { createServer } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
import { buildApp } from '../../src/app/http-app.js';
import { freePort, startListeningApp, TEST_SECRET_KEY, type ListeningTestApp } from '../helpers/harness.js';

/*
 * /metrics is not open to the API's callers: by default the API port answers it to callers on
 * this machine only; METRICS_TOKEN makes it ask for a bearer token; METRICS_PORT moves it to a
 * listener of its own (loopback unless METRICS_HOST says otherwise).
 */

const TOKEN = 'metrics-token-0123456789abcdef0123456789';
const SERIES = /^svc_v2_sunset_timestamp_seconds \d+$/m;

/** A scrape from another machine: the app's own handling of a socket whose peer is not loopback. */
const fromElsewhere = (t: ListeningTestApp, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '198.51.100.7', headers });

describe('metrics-access: by default, callers on this machine only', () => {
  let t: ListeningTestApp;
  beforeAll(async () => {
    t = await startListeningApp('pglite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers a direct loopback scrape, as the demo and a local Prometheus need', async () => {
    const response = await fetch(`${t.baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(SERIES);
  });

  it('refuses a scrape from another address with 403, saying what to configure', async () => {
    const response = await fromElsewhere(t);
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({
      ok: false,
      error: { code: 'metrics_loopback_only', message: expect.stringContaining('set METRICS_TOKEN') },
    });
    expect(response.body).not.toMatch(SERIES);
  });

  it('refuses a scrape that a proxy on this machine forwarded', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const response = await fetch(`${t.baseUrl}/metrics`, { headers: { [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9' } });
      expect(response.status, header).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('metrics_loopback_only');
    }
  });
});

describe('metrics-access: METRICS_TOKEN', () => {
  let t: ListeningTestApp;
  beforeAll(async () => {
    t = await startListeningApp('pglite', { config: { metricsToken: TOKEN } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 401 with a Bearer challenge without the token or with another one, from loopback too', async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, TOKEN, `Basic ${TOKEN}`]) {
      const response = await fetch(`${t.baseUrl}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      expect(response.status, authorization).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error).toEqual({ code: 'metrics_token_required', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
    }
  });

  it('answers the token, from any address', async () => {
    const local = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(local.status).toBe(200);
    expect(await local.text()).toMatch(SERIES);
    const remote = await fromElsewhere(t, { authorization: `bearer ${TOKEN}` });
    expect(remote.statusCode).toBe(200);
    expect(remote.body).toMatch(SERIES);
  });
});

describe('metrics-access: METRICS_PORT', () => {
  let t: ListeningTestApp;
  let metricsUrl: string;
  beforeAll(async () => {
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    t = await startListeningApp('pglite', { config: { metricsPort, metricsToken: TOKEN } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves /metrics on its own listener only; the API port answers 404', async () => {
    const api = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('route_not_found');

    const scrape = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toContain('text/plain');
    expect(await scrape.text()).toMatch(SERIES);
  });

  it('asks for the token there too, and serves nothing else', async () => {
    const refused = await fetch(`${metricsUrl}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await refused.json()).toMatchObject({ ok: false, error: { code: 'metrics_token_required' }, meta: { requestId: expect.any(String) } });
    const other = await fetch(`${metricsUrl}/v4/me`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ ok: false, error: { code: 'route_not_found' } });
  });

  it('fails the start, naming the setting, when the port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const core = await createCore(
      loadConfig({}, { dataDir: 'memory://', secretKey: TEST_SECRET_KEY, logLevel: 'silent', metricsPort: port }),
      { logger: pino({ level: 'silent' }) },
    );
    try {
      const app = await buildApp(core);
      const ready = app.ready();
      await expect(ready).rejects.toThrow(ConfigError);
      await expect(ready).rejects.toThrow(`Cannot listen on 127.0.0.1:${port} for /metrics (METRICS_HOST, METRICS_PORT): another process is using it`);
      await app.close();
    } finally {
      await core.close();
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('metrics-access: configuration', () => {
  it('refuses a short token and a port that is no port, naming the variable', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN: must be at least 32 characters');
    expect(() => loadConfig({ METRICS_PORT: 'nine' })).toThrow(/METRICS_PORT: /);
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: TOKEN })).toMatchObject({ metricsPort: 9464, metricsHost: '127.0.0.1', metricsToken: TOKEN });
  });
});
