import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

const METRIC_NAMES = [
  'svc_v2_requests_total',
  'svc_v2_translation_seconds',
  'svc_v2_upstream_errors_total',
  'svc_v4_legacy_key_rejections_total',
  'svc_v2_sunset_timestamp_seconds',
];

describe.each(backends())('/metrics [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  const scrape = async () => {
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    return response.body;
  };
  /** The sample of `metric` with exactly `labels`, or 0 when it has not been recorded yet. */
  const sample = (text: string, metric: string, labels = '') => {
    const line = text.split('\n').find((l) => l.startsWith(`${metric}${labels} `));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('serves every gateway metric and the process metrics, without credentials', async () => {
    const text = await scrape();
    for (const name of METRIC_NAMES) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
  });

  it('exposes the sunset of the maps as Unix seconds', async () => {
    expect(sample(await scrape(), 'svc_v2_sunset_timestamp_seconds')).toBe(1798761600);
  });

  it('counts a legacy key refused on /v4/me as a rest-surface rejection', async () => {
    const { rawKey } = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'metrics probe',
      scopes: ['api.employees.getAll'],
    });
    const metric = 'svc_v4_legacy_key_rejections_total';
    const before = sample(await scrape(), metric, '{surface="rest"}');
    const me = await client(t.app, rawKey).get('/v4/me');
    expect(me.status).toBe(401);
    expect(me.body.error.code).toBe('api_key_not_user_bound');
    expect(sample(await scrape(), metric, '{surface="rest"}')).toBe(before + 1);
  });

  // Hostile review: percent-encoded spellings reached the v4 routes (the authenticator refused the key) but went uncounted.
  // A path that only begins like a surface is no surface: routing answers it, and nothing is counted.
  it.each([
    ['/%764/me', 'rest', 'GET', 401, 1],
    ['/v%34/employees', 'rest', 'GET', 401, 1],
    ['/%6Dcp', 'mcp', 'POST', 401, 1],
    ['/api/%6Fauth/register', 'oauth', 'POST', 401, 1],
    ['/v40/me', 'rest', 'GET', 404, 0],
    ['/mcpx', 'mcp', 'GET', 404, 0],
    ['/api/oauthx/register', 'oauth', 'GET', 404, 0],
  ] as const)('a legacy key sent to %s (%s surface): %s answers %i, counted %i time(s)', async (path, surface, method, status, counted) => {
    const { rawKey } = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: `probe ${path}`, scopes: ['api.employees.getAll'] });
    const metric = 'svc_v4_legacy_key_rejections_total';
    const before = sample(await scrape(), metric, `{surface="${surface}"}`);
    const response = await t.app.inject({ method, url: path, headers: { 'x-api-key': rawKey } });
    expect(response.statusCode).toBe(status);
    expect(sample(await scrape(), metric, `{surface="${surface}"}`)).toBe(before + counted);
  });

  it('does not count a malformed v4 key as a legacy key', async () => {
    const metric = 'svc_v4_legacy_key_rejections_total';
    const before = sample(await scrape(), metric, '{surface="rest"}');
    expect((await client(t.app, 'svc_sk_nonsense').get('/v4/me')).status).toBe(401);
    expect(sample(await scrape(), metric, '{surface="rest"}')).toBe(before);
  });

  it('records a v2 request by route, scope, capability and outcome, and its latency by route', async () => {
    const labels = { route: 'GET /employees/:id', scope: 'api.employee.get', capability: 'mcp:employees:read', outcome: 'ok' };
    t.core.metrics.gateway.recordV2Request(labels, 0.02);
    t.core.metrics.gateway.recordV2Request(labels, 0.3);
    t.core.metrics.gateway.recordV2Request({ ...labels, outcome: 'denied' }, 0.001);
    const text = await scrape();
    const selector = (outcome: string) =>
      `{route="GET /employees/:id",scope="api.employee.get",capability="mcp:employees:read",outcome="${outcome}"}`;
    expect(sample(text, 'svc_v2_requests_total', selector('ok'))).toBe(2);
    expect(sample(text, 'svc_v2_requests_total', selector('denied'))).toBe(1);
    expect(sample(text, 'svc_v2_translation_seconds_count', '{route="GET /employees/:id"}')).toBe(3);
    expect(sample(text, 'svc_v2_translation_seconds_bucket', '{le="0.025",route="GET /employees/:id"}')).toBe(2);
  });

  it('counts upstream errors by kind', async () => {
    t.core.metrics.gateway.recordUpstreamError('v4_unreachable');
    expect(sample(await scrape(), 'svc_v2_upstream_errors_total', '{kind="v4_unreachable"}')).toBe(1);
  });
});
