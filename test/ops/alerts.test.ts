import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { freePort, startTestApp, type TestApp } from '../helpers/harness.js';
import { anchorsOf, headingAnchor } from '../helpers/markdown.js';

/*
 * The alert rules under Prometheus's own tool (alerts.test.yml holds their unit tests), and the
 * label values the HighServerErrorRatio alert relies on, as the service really sets them.
 */

const run = promisify(execFile);
const RULES = 'ops/prometheus/alerts.yml';
const rules = (
  parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string; annotations: Record<string, string> }> }> }
).groups.flatMap((g) => g.rules);
const errorRatio = rules.find((rule) => rule.alert === 'HighServerErrorRatio')!;

describe('the alerts’ runbooks and commands', () => {
  it('reads anchors as GitHub writes them', () => {
    expect(headingAnchor('Shared state: what travels through PostgreSQL, what through Redis')).toBe('shared-state-what-travels-through-postgresql-what-through-redis');
    expect(headingAnchor('V2BrownoutSoon')).toBe('v2brownoutsoon');
  });

  it('give every alert a runbook_url whose anchor is a heading of the docs', () => {
    const problems = rules.flatMap(({ alert, annotations }) => {
      const url = annotations.runbook_url;
      if (!url) return [`${alert}: no runbook_url`];
      const [file, anchor] = url.split('#');
      if (!file || !/^docs\/(operations|migration)\.md$/.test(file) || !anchor) return [`${alert}: ${url} is not docs/operations.md or docs/migration.md with an anchor`];
      return anchorsOf(file).has(anchor) ? [] : [`${alert}: ${file} has no heading for #${anchor}`];
    });
    expect(rules.length).toBeGreaterThanOrEqual(7);
    expect(problems).toEqual([]);
  });

  it('name only svc commands, which work while the server runs, and give the reissue path on v2 traffic', () => {
    const texts = rules.map(({ alert, annotations }) => [alert, Object.values(annotations).join('\n')] as const);
    expect(texts.filter(([, text]) => text.includes('svc-server')).map(([alert]) => alert)).toEqual([]);
    const reissuing = texts.filter(([alert]) => /^V2(TrafficNearSunset|Brownout)/.test(alert) && alert !== 'V2BrownoutNow');
    expect(reissuing.map(([alert]) => alert).sort()).toEqual(['V2BrownoutSoon', 'V2TrafficNearSunset', 'V2TrafficNearSunsetCritical']);
    for (const [, text] of reissuing) {
      expect(text).toContain('svc migrate plan --key <id>');
      expect(text).toContain('svc legacy-keys mint-successor <id>');
    }
  });
});

describe.skipIf(!inject('promtool'))('the Prometheus alert rules, under promtool', () => {
  it('are valid rules', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', RULES]);
    expect(stdout).toContain('SUCCESS');
  });

  it('pass their unit tests: the documented 501s never fire HighServerErrorRatio, real 5xx still do', async () => {
    const result = await run('promtool', ['test', 'rules', 'ops/prometheus/alerts.test.yml']).catch((error: { stdout: string; stderr: string }) => error);
    expect(`${result.stdout}${result.stderr}`).toMatch(/SUCCESS/);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/FAILED/);
  });
});

describe('the 501s HighServerErrorRatio leaves out', () => {
  let t: TestApp;
  let upstreamDown: TestApp;
  const samples = async (app: TestApp, metric: string) =>
    (await app.core.metrics.registry.getSingleMetric(metric)!.get()).values;

  beforeAll(async () => {
    // A loopback port nothing listens on: the legacy v2 service is down.
    const closed = await freePort();
    [t, upstreamDown] = await Promise.all([startTestApp('pglite'), startTestApp('pglite', { config: { legacyV2Upstream: `http://127.0.0.1:${closed}` } })]);
  });
  afterAll(async () => Promise.all([t.close(), upstreamDown.close()]));

  const callCatalogs = async (app: TestApp) => {
    const { rawKey } = await createLegacyKey(app.core, app.core.mappings, { companyId: app.demo.companies.acme, name: 'catalogs', scopes: ['api.catalogs.getAll'] });
    return app.app.inject({ url: '/v2/catalogs', headers: { 'x-api-key': rawKey! } });
  };

  it('subtracts exactly the v2 answers the gateway counts as no_successor, per job', () => {
    expect(errorRatio.expr).toContain('sum by (job) (rate(svc_v2_requests_total{outcome="no_successor"}[5m]))');
  });

  it('are the 501 no_v4_successor answers, counted as such next to their HTTP status', async () => {
    const res = await callCatalogs(t);
    expect(res.statusCode).toBe(501);
    expect(res.json().error.code).toBe('no_v4_successor');
    expect(await samples(t, 'svc_v2_requests_total')).toEqual([
      expect.objectContaining({ value: 1, labels: expect.objectContaining({ route: 'GET /catalogs', outcome: 'no_successor' }) }),
    ]);
    const http = (await t.core.metrics.registry.getSingleMetric('svc_http_request_duration_seconds')!.get()).values;
    expect(http).toContainEqual(expect.objectContaining({ metricName: 'svc_http_request_duration_seconds_count', value: 1, labels: expect.objectContaining({ route: '/v2/catalogs', status: '501' }) }));
  });

  it('are not a 501 the legacy v2 service answers itself: that counts as its error', async () => {
    const legacy = createServer((_request, response) => response.writeHead(501, { 'content-type': 'application/json' }).end('{"error":"not implemented"}'));
    await new Promise<void>((resolve) => legacy.listen(0, '127.0.0.1', resolve));
    const forwarding = await startTestApp('pglite', { config: { legacyV2Upstream: `http://127.0.0.1:${(legacy.address() as AddressInfo).port}` } });
    try {
      expect((await callCatalogs(forwarding)).statusCode).toBe(501);
      expect(await samples(forwarding, 'svc_v2_requests_total')).toEqual([
        expect.objectContaining({ value: 1, labels: expect.objectContaining({ route: 'GET /catalogs', outcome: 'upstream_error' }) }),
      ]);
    } finally {
      await forwarding.close();
      legacy.close();
    }
  });

  it('are not a legacy v2 service that cannot be reached: that 5xx still counts', async () => {
    const res = await callCatalogs(upstreamDown);
    expect(res.statusCode).toBe(502);
    expect(await samples(upstreamDown, 'svc_v2_requests_total')).toEqual([
      expect.objectContaining({ value: 1, labels: expect.objectContaining({ route: 'GET /catalogs', outcome: 'upstream_error' }) }),
    ]);
  });
});
