import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUserPassword } from '../../src/access/passwords.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { buildMigrationGuide } from '../../src/migration/migration-guide.js';
import type { MigrationPlan } from '../../src/migration/migration-plan.js';
import { backends, client, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { FormBrowser } from '../oauth/support.js';

/*
 * The migration plan of one legacy key, as admin JSON (GET /v4/admin/legacy-keys/:id/plan) and as
 * the page linked from the dashboard: what the key called in the window, busiest first, with the
 * guide's v4 calls and field changes; what stays on v2 and why; the least capabilities; the steps.
 */

const NOW = new Date('2026-11-22T12:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);
const SCOPES = ['api.employees.getAll', 'api.employee.deliveryAddress.get', 'api.employee.update', 'api.catalogs.getAll', 'api.teams.getAll'];

describe.each(backends())('migration plan per legacy key [%s]', (backend) => {
  let s: ListeningTestApp;
  let keyId: string;
  let catalogsOnly: string;
  let admin: ReturnType<typeof client>;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => NOW } });
    admin = client(s.app, s.demo.apiKeys.admin);
    const { acme } = s.demo.companies;
    // The name is shown on the page: markup in it must stay text.
    keyId = (await createLegacyKey(s.core, s.core.mappings, { companyId: acme, name: 'HR <script>alert(1)</script> sync', scopes: SCOPES })).id;
    catalogsOnly = (await createLegacyKey(s.core, s.core.mappings, { companyId: acme, name: 'Catalog reader', scopes: ['api.catalogs.getAll'] })).id;
    const usage = s.core.legacyUsage;
    const record = (id: string, endpoint: string, scope: string, calls: number, at = daysAgo(0)) => {
      for (let i = 0; i < calls; i++) usage.record(id, endpoint, scope, at);
    };
    record(keyId, 'GET /employees/:id/deliveryAddress', 'api.employee.deliveryAddress.get', 12);
    record(keyId, 'GET /employees', 'api.employees.getAll', 4, daysAgo(3));
    record(keyId, 'GET /employees', 'api.employees.getAll', 1);
    record(keyId, 'GET /catalogs', 'api.catalogs.getAll', 7, daysAgo(1));
    record(keyId, 'PATCH /employees/:id', 'api.employee.update', 2);
    // Before the 30-day window: never counted, so api.teams.getAll earns no capability.
    record(keyId, 'GET /teams', 'api.teams.getAll', 50, daysAgo(45));
    record(catalogsOnly, 'GET /catalogs', 'api.catalogs.getAll', 3);
    await usage.flush();
  });
  afterAll(async () => s?.close());

  const planOf = async (id: string): Promise<MigrationPlan> => {
    const answer = await admin.get(`/v4/admin/legacy-keys/${id}/plan`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.data as MigrationPlan;
  };

  it('lists the endpoints called in the window by volume, each with the guide’s v4 calls and field changes', async () => {
    const plan = await planOf(keyId);
    expect(plan.window).toEqual({ days: 30, since: '2026-10-23' });
    expect(plan.endpoints.map((e) => [e.endpoint, e.calls])).toEqual([
      ['GET /v2/employees/:id/deliveryAddress', 12],
      ['GET /v2/employees', 5],
      ['PATCH /v2/employees/:id', 2],
    ]);
    expect(plan.totals).toEqual({ calls: 26, movable: 19, staying: 7 });
    // The guide's own sections, not recomputed.
    const guide = new Map(buildMigrationGuide(s.core.mappings).endpoints.map((e) => [`${e.method} ${e.path}`, e]));
    for (const endpoint of plan.endpoints) {
      const section = guide.get(endpoint.endpoint)!;
      expect(endpoint).toMatchObject({ successor: section.successor, changes: section.changes, capabilities: section.capabilities, guide: `/docs/migration#${section.anchor}` });
    }
    expect(plan.endpoints[1]!.changes.map((c) => c.kind)).toContain('list_envelope');
  });

  it('lists the no-successor endpoints with the reason, and only the capabilities of what was called', async () => {
    const plan = await planOf(keyId);
    expect(plan.staysOnV2).toEqual([
      expect.objectContaining({ endpoint: 'GET /v2/catalogs', scope: 'api.catalogs.getAll', calls: 7, lastDay: '2026-11-21', reason: expect.stringMatching(/\w/) }),
    ]);
    // api.teams.getAll is granted but not called in the window; api.catalogs.getAll has no capability.
    expect(plan.capabilities.minimal).toEqual(['mcp:employees:read', 'mcp:employees:write']);
    expect(plan.capabilities.allowed).toContain('mcp:teams:read');
    expect(plan.capabilities.minimal).not.toContain('mcp:teams:read');
    // PATCH /employees/:id looks a team name up in v4: named apart, not minted by default.
    expect(plan.capabilities.forLookups).toEqual(['mcp:teams:read']);
    const mint = plan.steps.find((step) => step.id === 'mint_successor')!;
    expect(mint).toMatchObject({ done: false, command: `svc legacy-keys mint-successor ${keyId} --capabilities mcp:employees:read,mcp:employees:write` });
    expect(plan.steps.find((step) => step.id === 'disable_v2_key')!.text).toContain('GET /v2/catalogs');
    expect(plan.cutover.stage).toBe('v2_only');
    expect(plan.successorUser).toBe(`v4-successor+${keyId}@co-acme.invalid`);
  });

  it('marks the steps done from the cutover stage once the successor is minted', async () => {
    const minted = await admin.post(`/v4/admin/legacy-keys/${keyId}/successor`, {});
    expect(minted.status).toBe(201);
    expect(minted.body.data.successor.capabilities).toEqual((await planOf(keyId)).capabilities.minimal);
    const plan = await planOf(keyId);
    expect(plan.cutover.stage).toBe('successor_minted');
    expect(plan.steps.find((step) => step.id === 'mint_successor')).toMatchObject({ done: true, command: null });
    expect(plan.steps.find((step) => step.id === 'first_v4_call')).toMatchObject({ done: false });
  });

  it('has nothing to mint for a key whose scopes have no v4 successor', async () => {
    const plan = await planOf(catalogsOnly);
    expect(plan.endpoints).toEqual([]);
    expect(plan.staysOnV2.map((e) => e.endpoint)).toEqual(['GET /v2/catalogs']);
    expect(plan.steps.map((step) => step.id)).toEqual(['read_guide', 'mint_successor']);
    expect(plan.steps[1]).toMatchObject({ command: null, text: expect.stringContaining('Nothing to mint') });
  });

  it('answers admins of the key’s company only', async () => {
    // A manager's key may read company data, and still is no admin; an admin key must read company data.
    const manager = client(s.app, await keyWith(s, 'manager', ['mcp:employees:read', 'mcp:company:read']));
    expect((await manager.get(`/v4/admin/legacy-keys/${keyId}/plan`)).body.error.code).toBe('admin_only');
    const narrowAdmin = client(s.app, (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:employees:read'], 'narrow')).rawKey);
    expect((await narrowAdmin.get(`/v4/admin/legacy-keys/${keyId}/plan`)).body.error.code).toBe('missing_capability');
    await createUser(s.core.db, { email: 'plan-ops@globex.example', displayName: 'Globex Ops', role: 'admin', companyIds: [s.demo.companies.globex] });
    await setUserPassword(s.core.db, 'plan-ops@globex.example', 'globex-ops-password');
    const globex = client(s.app, (await mintKeyForUser(s.core.db, 'plan-ops@globex.example', ['mcp:company:read'], 'test')).rawKey);
    expect((await globex.get(`/v4/admin/legacy-keys/${keyId}/plan`)).status).toBe(404);
    expect((await admin.get('/v4/admin/legacy-keys/lk_missing/plan')).status).toBe(404);
  });

  it('serves the plan as a page linked from the dashboard, escaped, to admins only', async () => {
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, s.demo.emails.admin)).status).toBe(303);
    const dashboard = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
    expect(dashboard).toContain(`<a href="/app/migration/keys/${keyId}/plan">Migration plan</a>`);

    const response = await browser.fetch(`${s.baseUrl}/app/migration/keys/${keyId}/plan`);
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).not.toContain('<script>');
    expect(page).toContain('HR &#60;script&#62;alert(1)&#60;/script&#62; sync');
    const rows = [...(/<table id="plan-endpoints">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '').matchAll(/<code>(\w+ \/v2\/[^<]*)<\/code>/g)].map((m) => m[1]);
    expect(rows).toEqual(['GET /v2/employees/:id/deliveryAddress', 'GET /v2/employees', 'PATCH /v2/employees/:id']);
    expect(page).toMatch(/<table id="plan-stays">[\s\S]*GET \/v2\/catalogs/);
    expect(page).toContain('<li data-step="mint_successor" data-done="true">');
    expect(page).toContain(`svc legacy-keys disable ${keyId}`);

    const globex = new FormBrowser();
    expect((await globex.signIn(s.baseUrl, 'plan-ops@globex.example', 'globex-ops-password')).status).toBe(303);
    expect((await globex.fetch(`${s.baseUrl}/app/migration/keys/${keyId}/plan`)).status).toBe(404);
    await createUser(s.core.db, { email: 'plan-manager@acme.example', displayName: 'Acme Manager', role: 'manager', companyIds: [s.demo.companies.acme] });
    await setUserPassword(s.core.db, 'plan-manager@acme.example', 'acme-manager-password');
    const manager = new FormBrowser();
    expect((await manager.signIn(s.baseUrl, 'plan-manager@acme.example', 'acme-manager-password')).status).toBe(303);
    expect((await manager.fetch(`${s.baseUrl}/app/migration/keys/${keyId}/plan`)).status).toBe(403);
    // Signed out: sent to sign in.
    expect((await new FormBrowser().fetch(`${s.baseUrl}/app/migration/keys/${keyId}/plan`)).status).toBe(303);
  });
});
