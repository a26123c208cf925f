import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore, type Core } from '../../src/app/core.js';
import { CUTOVER_STAGES } from '../../src/legacy/cutover-stage.js';
import { createLegacyKey, listLegacyKeys } from '../../src/legacy/legacy-keys.js';
import { buildApp } from '../../src/app/http-app.js';
import { sql } from '../../src/store/sql.js';
import { client, startTestApp, TEST_SECRET_KEY, type TestApp } from '../helpers/harness.js';

/*
 * The keys-per-stage gauge of two cores on one PostgreSQL database: each counts the shared
 * database, so each reports the whole figure, and the dashboard's query (max by stage over the
 * instances) gives it once, evaluated by Prometheus's own engine (promtool) on the two real scrapes.
 */

const run = promisify(execFile);
const dashboard = JSON.parse(readFileSync('ops/grafana/migration-dashboard.json', 'utf8')) as { panels: Array<{ title?: string; targets?: Array<{ expr?: string }> }> };
const stageQueries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr ?? '')).filter((expr) => expr.includes('svc_legacy_keys_by_stage'));

/** The gauge's series in a scrape, by stage. */
const stagesIn = (exposition: string): Record<string, number> =>
  Object.fromEntries([...exposition.matchAll(/^svc_legacy_keys_by_stage\{stage="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));

describe.skipIf(!inject('postgresUrl'))('legacy keys per stage across two cores on one PostgreSQL database', () => {
  let a: TestApp;
  let otherCore: Core;
  let otherApp: FastifyInstance;
  /** The database's own counts, from the keys' stages. */
  const truth: Record<string, number> = Object.fromEntries(CUTOVER_STAGES.map((stage) => [stage, 0]));
  /** Each core's /metrics exposition, by the instance label Prometheus would give it. */
  let scrapes: Record<string, string>;

  beforeAll(async () => {
    a = await startTestApp('postgres');
    const [{ schema }] = (await a.core.db.query<{ schema: string }>(sql`SELECT current_schema() AS schema`)) as [{ schema: string }];
    const config = loadConfig({}, { dataDir: 'memory://', databaseUrl: a.core.config.databaseUrl, secretKey: TEST_SECRET_KEY, logLevel: 'silent' });
    otherCore = await createCore(config, { schema, logger: pino({ level: 'silent' }) });
    otherApp = await buildApp(otherCore);
    await otherApp.ready();

    // A key registered through one core gets its successor minted through the other.
    const key = await createLegacyKey(a.core, a.core.mappings, { companyId: a.demo.companies.acme, name: 'Two cores', scopes: ['api.employees.getAll'] });
    const minted = await client(otherApp, a.demo.apiKeys.admin).post(`/v4/admin/legacy-keys/${key.id}/successor`, { capabilities: ['mcp:employees:read'] });
    expect(minted.status).toBe(201);
    for (const { cutover } of await listLegacyKeys(a.core)) truth[cutover.stage]! += 1;
    scrapes = { 'core-1:3001': await a.core.metrics.registry.metrics(), 'core-2:3001': await otherCore.metrics.registry.metrics() };
  });
  afterAll(async () => {
    await otherApp?.close();
    await otherCore?.close();
    await a?.close();
  });

  it('are the whole database’s counts on each core, the successor minted on the other one included', () => {
    expect(truth.successor_minted).toBeGreaterThanOrEqual(1);
    for (const exposition of Object.values(scrapes)) expect(stagesIn(exposition)).toEqual(truth);
  });

  it.skipIf(!inject('promtool'))('count each key once under every dashboard query of the gauge (max by stage over the instances)', async () => {
    expect(stageQueries.length).toBeGreaterThanOrEqual(2);
    const series = Object.entries(scrapes).flatMap(([instance, exposition]) =>
      Object.entries(stagesIn(exposition)).map(([stage, count]) => ({ series: `svc_legacy_keys_by_stage{job="svc", instance="${instance}", stage="${stage}"}`, values: `${count}x5` })),
    );
    const expected = Object.entries(truth).map(([stage, value]) => ({ labels: `{stage="${stage}"}`, value }));
    const tests = stageQueries.map((query) => ({
      interval: '1m',
      input_series: series,
      promql_expr_test: [{ expr: query.replaceAll('$job', '.*').replaceAll('$instance', '.*'), eval_time: '2m', exp_samples: expected }],
    }));
    const dir = mkdtempSync(join(tmpdir(), 'stage-gauge-'));
    try {
      writeFileSync(join(dir, 'stage.test.yml'), stringify({ rule_files: [], evaluation_interval: '1m', tests }));
      const result = await run('promtool', ['test', 'rules', join(dir, 'stage.test.yml')]).catch((error: { stdout: string; stderr: string }) => error);
      expect(`${result.stdout}${result.stderr}`).toMatch(/SUCCESS/);
      expect(`${result.stdout}${result.stderr}`).not.toMatch(/FAILED/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
