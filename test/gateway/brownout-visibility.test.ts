import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { FormBrowser } from '../oauth/support.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';

/*
 * The brownouts of the shipped mappings/sunset.yaml, seen wherever the sunset is shown: during the
 * first window (2026-12-01 14:00–17:00 UTC) and three days before it. The clock is the core's, so
 * the 410 and every surface read the same moment.
 */

const FIRST = { start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T17:00:00.000Z' };
const SECOND = { start: '2026-12-15T14:00:00.000Z', end: '2026-12-15T20:00:00.000Z' };
const DURING = new Date('2026-12-01T15:30:00Z');
const BEFORE = new Date('2026-11-28T09:00:00Z');

describe.each(backends())('brownouts on every surface that shows the sunset [%s]', (backend) => {
  let s: ListeningTestApp;
  let clock = DURING;
  let keyId: string;
  let rawKey: string;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => clock } });
    const created = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'HR sync', scopes: ['api.employees.getAll'] });
    keyId = created.id;
    rawKey = created.rawKey!;
  });
  afterAll(async () => s.close());

  const adminGet = async (path: string) => {
    const response = await fetch(`${s.baseUrl}${path}`, { headers: { 'x-api-key': s.demo.apiKeys.admin } });
    expect(response.status, path).toBe(200);
    return response.json() as Promise<{ data?: { sunset: { brownouts: unknown } }; sunset?: { brownouts: unknown } }>;
  };
  /** The plan, in the v4 envelope, and the dashboard's report as JSON. */
  const planBrownouts = async () => (await adminGet(`/v4/admin/legacy-keys/${keyId}/plan`)).data!.sunset.brownouts;
  const reportBrownouts = async () => (await adminGet('/app/migration.json')).sunset!.brownouts;
  const dashboard = async (path: string) => {
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, s.demo.emails.admin)).status).toBe(303);
    const response = await browser.fetch(`${s.baseUrl}${path}`);
    expect(response.status).toBe(200);
    return response.text();
  };
  const v2Employees = () => fetch(`${s.baseUrl}/v2/employees`, { headers: { 'x-api-key': rawKey } });
  const gauge = async (name: string) => (await s.core.metrics.registry.getSingleMetric(name)!.get()).values.map((v) => [v.labels, v.value]);

  describe('during the first window', () => {
    beforeAll(() => {
      clock = DURING;
    });

    it('answers v2 with 410 v2_brownout and Retry-After: the seconds to the window’s end', async () => {
      const response = await v2Employees();
      expect(response.status).toBe(410);
      expect(response.headers.get('retry-after')).toBe(String(90 * 60));
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('v2_brownout');
    });

    it('puts the active window in the plan, migration.json and the owner’s plan, which still answers', async () => {
      const active = { active: FIRST, next: SECOND, scheduled: [FIRST, SECOND] };
      const owner = await fetch(`${s.baseUrl}/v2/migration-plan`, { headers: { 'x-api-key': rawKey } });
      expect(owner.status).toBe(200);
      expect(((await owner.json()) as { sunset: { brownouts: unknown } }).sunset.brownouts).toEqual(active);
      expect(await planBrownouts()).toEqual(active);
      expect(await reportBrownouts()).toEqual(active);
    });

    it('shows a brownout banner above the dashboard and the plan page', async () => {
      for (const path of ['/app/migration', `/app/migration/keys/${keyId}/plan`]) {
        const page = await dashboard(path);
        expect(page, path).toMatch(/<div class="error" role="alert" data-testid="brownout-banner" data-brownout="active"><strong>Brownout now\.<\/strong>/);
        expect(page, path).toContain('v2 is in a scheduled brownout now, until 2026-12-01 17:00 UTC: every v2 call answers 410 Gone until then.');
        expect(page, path).toContain('Scheduled brownouts: 2026-12-01 14:00 UTC – 17:00 UTC; 2026-12-15 14:00 UTC – 20:00 UTC.');
      }
    });

    it('exports the window as a gauge for the alerts and the Grafana annotations', async () => {
      expect(await gauge('svc_v2_brownout_active')).toEqual([[{}, 1]]);
      expect(await gauge('svc_v2_next_brownout_start_timestamp_seconds')).toEqual([[{ window: `${SECOND.start}/${SECOND.end}` }, Date.parse(SECOND.start) / 1000]]);
    });
  });

  describe('three days before it', () => {
    beforeAll(() => {
      clock = BEFORE;
    });

    it('still answers v2', async () => {
      const response = await v2Employees();
      expect(response.status).toBe(200);
      expect(response.headers.get('retry-after')).toBeNull();
    });

    it('names the next window in the plan, migration.json and a notice on both pages', async () => {
      const ahead = { active: null, next: FIRST, scheduled: [FIRST, SECOND] };
      expect(await planBrownouts()).toEqual(ahead);
      expect(await reportBrownouts()).toEqual(ahead);
      for (const path of ['/app/migration', `/app/migration/keys/${keyId}/plan`]) {
        const page = await dashboard(path);
        expect(page, path).toContain('data-testid="brownout-banner" data-brownout="scheduled"><strong>Brownout ahead.</strong>');
        expect(page, path).toContain('Next v2 brownout in 3 days: 2026-12-01 14:00 UTC – 17:00 UTC; every v2 call answers 410 Gone during it.');
      }
      expect(await gauge('svc_v2_brownout_active')).toEqual([[{}, 0]]);
    });

    it('prints the next window in `svc migrate plan`, as a table and as a ticket', async () => {
      const plan = (...args: string[]) =>
        svc(['migrate', 'plan', '--key', keyId, ...args, '--api-key', s.demo.apiKeys.admin, '--api-url', s.baseUrl, '--allow-localhost'], isolatedEnv());
      const notice = 'Next v2 brownout in 3 days: 2026-12-01 14:00 UTC – 17:00 UTC; every v2 call answers 410 Gone during it.';
      for (const result of [await plan(), await plan('--format', 'markdown')]) {
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(notice);
      }
      expect(await gauge('svc_v2_next_brownout_start_timestamp_seconds')).toEqual([[{ window: `${FIRST.start}/${FIRST.end}` }, Date.parse(FIRST.start) / 1000]]);
    });
  });

  it('shows nothing once the last window is over', async () => {
    clock = new Date('2026-12-20T00:00:00Z');
    expect(await reportBrownouts()).toEqual({ active: null, next: null, scheduled: [] });
    expect(await dashboard('/app/migration')).not.toContain('brownout-banner');
    // Absent, not 0: the week's-notice alert must not read a window at the epoch.
    expect(await gauge('svc_v2_next_brownout_start_timestamp_seconds')).toEqual([]);
  });
});
