import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import type { ShadowReport } from '../../src/migration/shadow-check.js';
import { client, startTestApp, type ListeningTestApp, EVENTUALLY } from '../helpers/harness.js';
import { startShadowedApp, type LegacyV2Server } from '../helpers/legacy-v2.js';
import { isolatedEnv, listen, svc } from './svc-runner.js';

/*
 * `svc migrate shadow-report` against a started server whose shadow check compares sampled v2
 * reads with a small legacy v2 API (test/helpers/legacy-v2.ts), differences planted on purpose.
 * The report lives in the server's memory, so one store is enough here.
 */

type Doc = Record<string, unknown>;

// Outside the brownouts of sunset.yaml, so v2 answers.
const NOW = new Date('2026-06-01T12:00:00Z');
const env = isolatedEnv();

describe('svc migrate shadow-report against a server with the shadow check on [pglite]', { timeout: 120_000 }, () => {
  let keys: Map<string, string>;
  let t: ListeningTestApp;
  let legacy: LegacyV2Server;
  let rawKey: string;
  const report = (...args: string[]) => svc(['migrate', 'shadow-report', '--api-key', t.demo.apiKeys.admin, '--api-url', t.baseUrl, '--allow-localhost', ...args], env);
  const settled = async () => {
    const r = (await client(t.app, t.demo.apiKeys.admin).get('/v4/admin/shadow-report')).body.data as ShadowReport;
    return r.totals.compared + r.totals.legacySlow + r.totals.legacyError + r.totals.dropped;
  };
  /** A sampled v2 read, once its shadow check is done. */
  const checkedRead = async (path: string) => {
    const before = await settled();
    expect((await fetch(`${t.baseUrl}${path}`, { headers: { 'x-api-key': rawKey } })).status).toBe(200);
    await vi.waitFor(async () => expect(await settled()).toBe(before + 1), EVENTUALLY);
  };

  beforeAll(async () => {
    ({ t, legacy, keys } = await startShadowedApp('pglite', NOW));
    const key = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'HR sync',
      scopes: ['api.employees.getAll', 'api.employee.get', 'api.teams.getAll'],
    });
    rawKey = key.rawKey!;
    keys.set(rawKey, t.demo.companies.acme);
  });
  afterAll(async () => {
    await legacy?.stop();
    await t?.close();
  });

  it('passes the gate on equal answers only once something was compared', async () => {
    const empty = await report('--fail-on', 'different');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('no answer was compared');

    await checkedRead('/v2/teams');
    await checkedRead(`/v2/employees/${t.demo.employees.eve}`);
    const clean = await report('--fail-on', 'different');
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stderr).toBe('');
    expect(clean.stdout).toContain('2 answer(s) compared since');
    expect(clean.stdout).toMatch(/^ROUTE +COMPARED +EQUAL +DIFFERENT +LEGACY SLOW +LEGACY FAILED +DROPPED$/m);
    expect(clean.stdout).toMatch(/^GET \/teams +1 +1 +0 +0 +0 +0$/m);
    expect(clean.stdout).not.toContain('Differing field paths');
  });

  it('shows the routes, the differing paths and the examples; fails the gate; narrows to a route', async () => {
    const { eve, dana } = t.demo.employees;
    legacy.plant = (path, body) => {
      if (path === `/employees/${eve}` || path === `/employees/${dana}`) {
        const { secondaryEmail, ...rest } = body as Doc;
        return { ...rest, secondaryMail: secondaryEmail };
      }
      if (path === '/teams') return (body as Doc[]).slice(1);
      return body;
    };
    try {
      await checkedRead(`/v2/employees/${eve}`);
      await checkedRead(`/v2/employees/${dana}`);
      await checkedRead('/v2/teams');
    } finally {
      legacy.plant = (_path, body) => body;
    }

    const table = await report('--fail-on', 'different');
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/^GET \/employees\/:id +3 +1 +2 +0 +0 +0$/m);
    expect(table.stdout).toMatch(/Differing field paths\nROUTE +PATH +KIND +COUNT\nGET \/employees\/:id +secondaryEmail +added +2\n/);
    expect(table.stdout).toMatch(/^GET \/teams +\[\] +added +1$/m);
    expect(table.stdout).toContain('Last 3 differing answer(s)');
    expect(table.stdout).toMatch(new RegExp(`GET /employees/:id \\(/v2/employees/${dana}, legacy key lk_\\w+\\)\\n    secondaryMail \\(missing\\): v2 null\\n    secondaryEmail \\(added\\): gateway null\\n`));
    expect(table.stdout).not.toContain(rawKey);

    const one = JSON.parse((await report('--route', 'GET /employees/:id', '--examples', '1', '--format', 'json')).stdout).data as ShadowReport;
    expect(one.routes.map((r) => r.route)).toEqual(['GET /employees/:id']);
    expect(one.totals).toEqual({ compared: 3, equal: 1, different: 2, legacySlow: 0, legacyError: 0, dropped: 0 });
    expect(one.examples).toHaveLength(1);
    expect(one.examples[0]!.path).toBe(`/v2/employees/${dana}`);
    // A route never sampled cannot pass the gate.
    const unsampled = await report('--route', 'GET /employees', '--fail-on', 'different');
    expect(unsampled.code).toBe(1);
    expect(unsampled.stderr).toContain('--route GET /employees: no sampled call of this route yet');

    const markdown = await report('--format', 'markdown', '--examples', '0');
    expect(markdown.code).toBe(0);
    expect(markdown.stdout).toContain('| route | compared | equal | different | legacy slow | legacy failed | dropped |');
    expect(markdown.stdout).toContain('| GET /employees/:id | secondaryMail | missing | 2 |');
    expect(markdown.stdout).not.toContain('Last differing answers');
  });

  it('refuses bad flags and a caller who is not an admin', async () => {
    expect((await report('--examples', '-1')).code).toBe(2);
    expect((await report('--route', 'employees')).stderr).toContain('give a v2 route as "METHOD /path"');
    expect((await report('--fail-on', 'slow')).code).toBe(2);
    expect(await report('--format', 'yaml')).toMatchObject({ code: 2, stderr: 'svc: error: --format yaml: use one of table, json, text, markdown\n' });
    const manager = await svc(['migrate', 'shadow-report', '--api-key', t.demo.apiKeys.manager, '--api-url', t.baseUrl, '--allow-localhost'], env);
    expect(manager.code).toBe(4);
    expect(manager.stderr).toContain('admin_only');
  });
});

describe('svc migrate shadow-report with the shadow check off', () => {
  it('says so on stderr and what to set', { timeout: 60_000 }, async () => {
    const t = await startTestApp('pglite');
    try {
      const url = await listen(t);
      const result = await svc(['migrate', 'shadow-report', '--api-key', t.demo.apiKeys.admin, '--api-url', url, '--allow-localhost'], env);
      expect(result.code).toBe(0);
      expect(result.stderr).toContain('the shadow check is off on this server: set LEGACY_V2_UPSTREAM');
      expect(result.stderr).toContain('SHADOW_SAMPLE_RATE');
      expect(result.stdout).toContain('0 answer(s) compared');
    } finally {
      await t.close();
    }
  });
});
