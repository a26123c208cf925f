import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { dropKeys, redisUrl, uniquePrefix } from '../shared-state/redis-support.js';

/*
 * The shipped Grafana dashboard and Prometheus alert rules query only metrics that a built app
 * (with Redis configured, as the scaled-out deployment runs) really exports: a renamed metric
 * would otherwise leave an empty panel or an alert that never fires.
 */

const run = promisify(execFile);
const NOT_METRICS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression selects (functions, labels, keywords and variables left out). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\$\{?\w+\}?/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\boffset\s+\w+/g, '');
  const names = [...bare.matchAll(/(?<![\w.])[a-zA-Z_:][\w:]*(?![\w:]|\s*\()/g)].map((match) => match[0]);
  return [...new Set(names.filter((name) => !NOT_METRICS.has(name.toLowerCase())))];
}

interface Panel {
  title?: string;
  targets?: Array<{ expr?: string }>;
  panels?: Panel[];
}

const dashboard = JSON.parse(readFileSync('ops/grafana/migration-dashboard.json', 'utf8')) as {
  panels: Panel[];
  annotations: { list: Array<{ name: string; expr?: string }> };
};
const alerts = parse(readFileSync('ops/prometheus/alerts.yml', 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };

const dashboardQueries = (panels: Panel[]): Array<[string, string]> =>
  panels.flatMap((panel) => [
    ...(panel.targets ?? []).filter((target) => target.expr).map((target): [string, string] => [`panel "${panel.title}"`, target.expr!]),
    ...dashboardQueries(panel.panels ?? []),
  ]);
const queries: Array<[string, string]> = [
  ...dashboardQueries(dashboard.panels),
  ...dashboard.annotations.list.filter((a) => a.expr).map((a): [string, string] => [`annotation "${a.name}"`, a.expr!]),
  ...alerts.groups.flatMap((group) => group.rules.map((rule): [string, string] => [`alert ${rule.alert}`, rule.expr])),
];

// The registry exports the Redis metrics only with Redis configured.
describe.skipIf(!redisUrl())('ops files', () => {
  const prefix = uniquePrefix();
  let t: TestApp;
  let exported: Set<string>;

  beforeAll(async () => {
    t = await startTestApp('pglite', { seed: false, config: { redisUrl: redisUrl(), redisKeyPrefix: prefix } });
    const suffixes: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };
    const metrics = await t.core.metrics.registry.getMetricsAsJSON();
    exported = new Set(metrics.flatMap((metric) => (suffixes[metric.type] ?? ['']).map((suffix) => `${metric.name}${suffix}`)));
  });
  afterAll(async () => {
    await t.close();
    await dropKeys(redisUrl(), prefix);
  });

  it('reads metric names out of PromQL', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (le, route) (rate(svc_x_bucket{status=~"5.."}[$__rate_interval])))')).toEqual(['svc_x_bucket']);
    expect(metricNames('(max(a_seconds) - time()) / 86400 < 30 and on() sum(increase(b_total[1d])) > 0')).toEqual(['a_seconds', 'b_total']);
    expect(metricNames('min by (instance) (up) == 0 or vector(0)')).toEqual(['up']);
  });

  it('query only metrics the service exports', () => {
    expect(queries.length).toBeGreaterThanOrEqual(20);
    const problems = queries.flatMap(([where, expr]) => {
      const names = metricNames(expr);
      if (names.length === 0) return [`${where}: names no metric in ${expr}`];
      return names.filter((name) => !exported.has(name)).map((name) => `${where}: ${name} is not exported`);
    });
    expect(problems).toEqual([]);
  });

  it('ship the "v2 traffic still present N days before sunset" alert', () => {
    const rule = alerts.groups.flatMap((group) => group.rules).find((candidate) => candidate.alert === 'V2TrafficNearSunset');
    expect(metricNames(rule!.expr).sort()).toEqual(['svc_v2_requests_total', 'svc_v2_sunset_timestamp_seconds']);
  });

  it('aggregate the keys-per-stage gauge, which every instance reports whole, with max by (stage), never a sum', () => {
    const stageQueries = queries.filter(([, expr]) => expr.includes('svc_legacy_keys_by_stage'));
    expect(stageQueries.length).toBeGreaterThanOrEqual(2);
    for (const [, expr] of stageQueries) expect(expr).toMatch(/^max by \(stage\) \(svc_legacy_keys_by_stage\{[^}]*\}\)$/);
  });

  it('mark every brownout window on the dashboard’s time series', () => {
    expect(dashboard.annotations.list).toContainEqual(expect.objectContaining({ name: 'v2 brownouts', enable: true, expr: 'max(svc_v2_brownout_active{job=~"$job"}) == 1' }));
  });

  it('chart the migration signals the issue asks for', () => {
    const all = queries.map(([, expr]) => expr).join('\n');
    for (const metric of ['svc_v2_requests_total', 'svc_v2_translation_seconds_bucket', 'svc_v2_upstream_errors_total', 'svc_v4_legacy_key_rejections_total', 'svc_v2_sunset_timestamp_seconds', 'svc_http_request_duration_seconds_count', 'svc_mcp_tool_calls_total', 'svc_redis_up', 'svc_v2_brownout_active', 'svc_v2_next_brownout_start_timestamp_seconds', 'svc_legacy_keys_by_stage', 'svc_v2_shadow_checks_total', 'svc_v2_shadow_differences_total']) {
      expect(all).toContain(metric);
    }
  });
});

describe.skipIf(!inject('promtool'))('the Grafana dashboard’s queries, under promtool', () => {
  it('are valid PromQL once Grafana has put in its variables', async () => {
    // Each query as a recording rule: promtool parses every expression of a rule file.
    const grafanaVariables = (expr: string) =>
      expr.replaceAll('$__rate_interval', '5m').replaceAll('$__range', '1d').replaceAll('$job', '.*').replaceAll('$instance', '.*');
    const rules = queries.filter(([where]) => !where.startsWith('alert ')).map(([, expr], i) => ({ record: `dashboard:query_${i}`, expr: grafanaVariables(expr) }));
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-queries-'));
    try {
      writeFileSync(join(dir, 'queries.yml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const result = await run('promtool', ['check', 'rules', join(dir, 'queries.yml')]).catch((error: { stdout: string; stderr: string }) => error);
      expect(`${result.stdout}${result.stderr}`).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Grafana dashboard’s job and instance variables', () => {
  interface Variable {
    name: string;
    type: string;
    query?: { query: string };
    multi?: boolean;
    includeAll?: boolean;
  }
  const variables = (dashboard as unknown as { templating: { list: Variable[] } }).templating.list;
  const variable = (name: string) => variables.find((v) => v.name === name);
  /** The default Node metrics every process exports (prom-client's collectDefaultMetrics): not this service's own. */
  const isProcessMetric = (name: string) => !name.startsWith('svc_');

  /** Each selector of a metric in the expression, with its label matchers ('' when it has none). */
  function selectors(expr: string): Array<{ metric: string; matchers: string }> {
    return metricNames(expr).flatMap((metric) =>
      [...expr.matchAll(new RegExp(`(?<![\\w:])${metric}(?![\\w:])(\\{[^}]*\\})?`, 'g'))].map((m) => ({ metric, matchers: m[1] ?? '' })),
    );
  }

  it('lists the jobs and instances of this service only, instances of the chosen jobs', () => {
    expect(variable('job')).toMatchObject({ type: 'query', multi: true, includeAll: true, query: { query: 'label_values(svc_v2_sunset_timestamp_seconds, job)' } });
    expect(variable('instance')).toMatchObject({ type: 'query', multi: true, includeAll: true, query: { query: 'label_values(svc_v2_sunset_timestamp_seconds{job=~"$job"}, instance)' } });
  });

  it('filters every process panel, and every other query, by job and instance', () => {
    const dashboardOnly = dashboardQueries(dashboard.panels);
    const processQueries = dashboardOnly.filter(([, expr]) => metricNames(expr).some(isProcessMetric));
    expect(processQueries.map(([where]) => where).sort()).toEqual(['panel "CPU per instance"', 'panel "Event-loop lag p99 per instance"', 'panel "Resident memory per instance"']);
    const unfiltered = dashboardOnly.flatMap(([where, expr]) =>
      selectors(expr)
        .filter(({ matchers }) => !matchers.includes('job=~"$job"') || !matchers.includes('instance=~"$instance"'))
        .map(({ metric }) => `${where}: ${metric}`),
    );
    expect(unfiltered).toEqual([]);
  });

  it('reads selectors and their matchers out of PromQL', () => {
    expect(selectors('rate(a_total{job=~"$job", instance=~"$instance"}[5m]) / b_total')).toEqual([
      { metric: 'a_total', matchers: '{job=~"$job", instance=~"$instance"}' },
      { metric: 'b_total', matchers: '' },
    ]);
  });
});
