import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { backends, client, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { csrfOf, FormBrowser } from '../oauth/support.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';

/*
 * The cutover of one integration as its owner and an admin walk it, on a moved clock: the owner
 * reads the plan with the legacy key; the admin mints the successor with svc; a GET /v4/me does not
 * make it working, calls covering what the v2 calls need do; a new kind of v2 call moves it back and
 * the plan names the replace command, which the admin runs on the dashboard; once only calls without
 * a v4 successor are left the stage says so; quiet; the disable refused before, accepted after;
 * undone; and the audit of the retired key passes.
 */

const DAY_MS = 86_400_000;
const START = new Date('2026-11-02T09:00:00Z');
// Employees' delivery addresses and teams move to v4; catalogs have no v4 successor.
const SCOPES = ['api.employee.deliveryAddress.get', 'api.teams.getAll', 'api.catalogs.getAll'];

interface Cutover {
  stage: string;
  nextStep: string | null;
  successor: { firstUsedAt: string | null; exercised: unknown[] } | null;
  coverage: { needed: string[]; lacking: string[]; unexercised: string[] };
}
interface Plan {
  cutover: Cutover;
  steps: Array<{ id: string; text: string; command: string | null; done: boolean }>;
  ask?: { how: string };
}

describe.each(backends())('working means working: one integration’s cutover [%s]', { timeout: 120_000 }, (backend) => {
  let at = START;
  let s: ListeningTestApp;
  const env = isolatedEnv();

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: () => at } });
  });
  afterAll(async () => s?.close());

  const advance = (days: number) => (at = new Date(at.getTime() + days * DAY_MS));
  const admin = () => client(s.app, s.demo.apiKeys.admin);
  const v2 = (rawKey: string, path: string) => s.app.inject({ method: 'GET', url: path, headers: { 'x-api-key': rawKey } });
  const v4 = async (apiKey: string, path: string) => (await client(s.app, apiKey).get(path)).status;
  /** svc against the started server as the demo admin. */
  const svcAsAdmin = (args: string[]) => svc([...args, '--api-key', s.demo.apiKeys.admin, '--api-url', s.baseUrl, '--allow-localhost'], env);
  const adminPlan = async (id: string): Promise<Plan> => (await admin().get(`/v4/admin/legacy-keys/${id}/plan`)).body.data as Plan;
  const ownerPlan = async (rawKey: string): Promise<Plan> => {
    const response = await fetch(`${s.baseUrl}/v2/migration-plan`, { headers: { 'x-api-key': rawKey } });
    expect(response.status).toBe(200);
    return (await response.json()) as Plan;
  };
  const step = (plan: Plan, id: string) => plan.steps.find((st) => st.id === id)!;
  /** The stage as the admin plan, the owner's plan and the keys-per-stage gauge show it; the admin plan. */
  const expectStage = async (id: string, rawKey: string, stage: string): Promise<Plan> => {
    const plan = await adminPlan(id);
    expect(plan.cutover.stage).toBe(stage);
    expect((await ownerPlan(rawKey)).cutover).toEqual(plan.cutover);
    const metrics = await (await fetch(`${s.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^svc_legacy_keys_by_stage\\{stage="${stage}"\\} 1$`, 'm'));
    return plan;
  };
  const dashboard = async () => {
    const browser = new FormBrowser();
    expect((await browser.signIn(s.baseUrl, s.demo.emails.admin)).status).toBe(303);
    return { browser, page: await (await browser.fetch(`${s.baseUrl}/app/migration`)).text() };
  };
  const disable = (id: string, ...more: string[]) => svcAsAdmin(['legacy-keys', 'disable', id, '--yes', '--format', 'json', ...more]);

  it('walks the owner’s and the admin’s way from v2 only to a retired key', async () => {
    const legacy = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'Address sync', scopes: SCOPES });
    const rawKey = legacy.rawKey!;
    const dana = `/v4/employees/${s.demo.employees.dana}`;
    expect((await v2(rawKey, `/v2/employees/${s.demo.employees.dana}/deliveryAddress`)).statusCode).toBe(200);

    // The owner reads the key's own plan with the legacy key: its stage and how the successor is minted.
    let owner = await ownerPlan(rawKey);
    expect(owner.cutover).toMatchObject({ stage: 'v2_only', coverage: { needed: ['mcp:employees:read'], lacking: [], unexercised: [] } });
    const mintCommand = `svc legacy-keys mint-successor ${legacy.id} --capabilities mcp:employees:read`;
    expect(owner.ask!.how).toContain(mintCommand);

    // Day 1: the admin runs that command.
    advance(1);
    const minted = await svcAsAdmin([...mintCommand.split(' ').slice(1), '--format', 'json']);
    expect(minted.code, minted.stderr).toBe(0);
    const firstKey = JSON.parse(minted.stdout).data.successor.apiKey as string;
    await expectStage(legacy.id, rawKey, 'successor_minted');

    // Day 2: GET /v4/me authenticates, but exercises nothing the v2 calls need.
    advance(1);
    expect(await v4(firstKey, '/v4/me')).toBe(200);
    let plan = await expectStage(legacy.id, rawKey, 'successor_minted');
    expect(plan.cutover.coverage).toEqual({ needed: ['mcp:employees:read'], lacking: [], unexercised: ['mcp:employees:read'] });
    expect(plan.cutover.successor).toMatchObject({ firstUsedAt: at.toISOString(), exercised: [] });
    expect(step(plan, 'first_v4_call')).toMatchObject({ done: false, text: expect.stringContaining('Not yet covered: mcp:employees:read') });
    // A call needing the capability does.
    expect(await v4(firstKey, dana)).toBe(200);
    plan = await expectStage(legacy.id, rawKey, 'successor_working');
    expect(plan.cutover.coverage).toEqual({ needed: ['mcp:employees:read'], lacking: [], unexercised: [] });
    expect(step(plan, 'first_v4_call').done).toBe(true);

    // Day 3: a new kind of v2 call (teams) needs mcp:teams:read, which the successor lacks: back to minted, with the replace command.
    advance(1);
    expect((await v2(rawKey, '/v2/teams')).statusCode).toBe(200);
    plan = await expectStage(legacy.id, rawKey, 'successor_minted');
    const replaceCommand = `svc legacy-keys mint-successor ${legacy.id} --replace --capabilities mcp:employees:read,mcp:teams:read`;
    expect(plan.cutover.coverage).toEqual({ needed: ['mcp:employees:read', 'mcp:teams:read'], lacking: ['mcp:teams:read'], unexercised: [] });
    expect(step(plan, 'mint_successor')).toMatchObject({ done: false, command: replaceCommand });
    expect(plan.cutover.nextStep).toContain(replaceCommand);
    owner = await ownerPlan(rawKey);
    expect(step(owner, 'mint_successor').command).toBe(replaceCommand);
    const planText = await svcAsAdmin(['migrate', 'plan', '--key', legacy.id]);
    expect(planText.code, planText.stderr).toBe(0);
    expect(planText.stdout).toContain(replaceCommand);
    // The disable is refused, naming what is missing.
    const refused = await disable(legacy.id);
    expect([refused.code, JSON.parse(refused.stdout).error.code]).toEqual([5, 'legacy_key_in_use']);
    expect(refused.stderr).toContain(`lacks mcp:teams:read, which its v2 calls need`);

    // Day 4: the admin replaces the successor on the dashboard, the row's next step saying how.
    advance(1);
    const signedIn = await dashboard();
    expect(signedIn.page).toContain(replaceCommand);
    const replaced = await signedIn.browser.fetch(`${s.baseUrl}/app/migration/keys/${legacy.id}/successor`, {
      form: { _csrf: csrfOf(signedIn.page), capabilities: ['mcp:employees:read', 'mcp:teams:read'], replace: 'true' },
    });
    expect(replaced.status).toBe(201);
    const secondKey = /data-testid="successor-key">([^<]+)</.exec(await replaced.text())![1]!;
    expect(await v4(firstKey, '/v4/me')).toBe(401);
    // The new key's calls start over: employees alone leave teams unexercised.
    expect(await v4(secondKey, dana)).toBe(200);
    plan = await expectStage(legacy.id, rawKey, 'successor_minted');
    expect(plan.cutover.coverage).toMatchObject({ lacking: [], unexercised: ['mcp:teams:read'] });
    expect(step(plan, 'mint_successor')).toMatchObject({ done: true, command: null });
    expect(step(plan, 'first_v4_call').text).toContain('Not yet covered: mcp:teams:read');
    expect(await v4(secondKey, '/v4/teams')).toBe(200);
    await expectStage(legacy.id, rawKey, 'successor_working');

    // Days 4 to 19: only catalogs, which have no v4 successor, are still called on v2.
    for (const _day of [0, 5, 5, 5]) {
      advance(_day);
      expect((await v2(rawKey, '/v2/catalogs')).statusCode).not.toBe(401);
    }
    expect(at.toISOString()).toBe('2026-11-21T09:00:00.000Z');
    plan = await expectStage(legacy.id, rawKey, 'v2_unmovable_only');
    expect(plan.cutover.nextStep).toBe('Its remaining v2 calls have no v4 successor: they work until the sunset (disabling the key stops them)');
    expect(step(plan, 'move_calls').done).toBe(true);
    expect(step(plan, 'v2_quiet').done).toBe(false);
    const unmovable = await disable(legacy.id);
    expect(unmovable.code).toBe(5);
    expect(unmovable.stderr).toContain('its remaining v2 calls have no v4 successor, so disabling it stops them');

    // Day 33: the catalog calls ended 14 days ago; quiet, and the disable goes through.
    advance(14);
    await expectStage(legacy.id, rawKey, 'v2_quiet');
    const disabled = await disable(legacy.id, '--reason', 'moved to v4');
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(JSON.parse(disabled.stdout).data.key.cutover.stage).toBe('v2_disabled');
    expect((await v2(rawKey, '/v2/teams')).statusCode).toBe(401);

    // The undo: v2 answers the key again, and its quiet period starts over.
    const enabled = await svcAsAdmin(['legacy-keys', 'enable', legacy.id, '--reason', 'one more export', '--format', 'json']);
    expect(enabled.code, enabled.stderr).toBe(0);
    await expectStage(legacy.id, rawKey, 'successor_working');

    // Retired for good (forced: the undo restarted the quiet period); its audit passes.
    expect((await disable(legacy.id, '--force', '--reason', 'export done')).code).toBe(0);
    const audit = await svcAsAdmin(['migrate', 'audit', '--key', legacy.id, '--format', 'json']);
    expect(audit.code, audit.stdout).toBe(0);
    expect(JSON.parse(audit.stdout).data).toMatchObject({ keyState: 'retired', findings: [] });
  });
});
