import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUserPassword } from '../../src/access/passwords.js';
import { mintKeyForUser } from '../../src/domain/admin.js';
import { autoDisableQuietKeys } from '../../src/migration/cutover.js';
import { createLegacyKey, type CreatedLegacyKey } from '../../src/legacy/legacy-keys.js';
import { defaultMappingsDir, loadMappings, type Mappings } from '../../src/legacy/mappings.js';
import { backends, client, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { csrfOf, DEMO_PASSWORD, FormBrowser } from '../oauth/support.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';
import { officeAddress } from '../helpers/bodies.js';

/*
 * Hostile review of the migration's administration: a successor key (an integration's non-personal
 * user, an admin of its company) administered other integrations' keys; a disable had no undo; the
 * dashboard's JSON ignored an API key's capabilities. Each attack is tried on both stores through the
 * real server (REST, the pages, the built svc). The access matrix tries the successor key on every
 * operation and surface.
 */

const DAY_MS = 86_400_000;
const START = new Date('2026-11-02T09:00:00Z');
const SCOPES = ['api.employees.getAll', 'api.company.addresses.get', 'api.company.addresses.create'];

class Clock {
  at = START;
  readonly now = () => this.at;
  advance(days: number): void {
    this.at = new Date(this.at.getTime() + days * DAY_MS);
  }
}

/** The package's maps with the automatic policy on, checked when the test calls it (the server's timer: every 20 days). */
function policyOn(): Mappings {
  const mappings = loadMappings(defaultMappingsDir());
  return { ...mappings, sunset: { ...mappings.sunset, cutover: { ...mappings.sunset.cutover, autoDisable: true, checkEveryMinutes: 30_000 } } };
}

describe.each(backends())('migration administration [%s]', (backend) => {
  const clock = new Clock();
  let s: ListeningTestApp;
  let admin: ReturnType<typeof client>;
  let serial = 0;

  beforeAll(async () => {
    s = await startListeningApp(backend, { core: { now: clock.now, mappings: policyOn() } });
    admin = client(s.app, s.demo.apiKeys.admin);
  });
  afterAll(async () => s?.close());

  const register = (name: string): Promise<CreatedLegacyKey> =>
    createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: `${name} ${++serial}`, scopes: SCOPES });
  const callV2 = async (rawKey: string) => (await s.app.inject({ method: 'GET', url: '/v2/employees', headers: { 'x-api-key': rawKey } })).statusCode;
  /** A key's successor as the human admin mints it: everything the key's scopes reach, company capabilities included. */
  const mintSuccessor = async (id: string, as = admin) => {
    const minted = await as.post(`/v4/admin/legacy-keys/${id}/successor`, { capabilities: ['mcp:employees:read', 'mcp:company:read', 'mcp:company:write'], replace: true });
    expect(minted.status).toBe(201);
    return minted.body.data.successor as { apiKey: string; keyId: string; userEmail: string };
  };
  const refusal = (answer: { status: number; body: { error?: { code: string } } }) => [answer.status, answer.body.error?.code];

  describe('a successor key administers the migration', () => {
    let mine: CreatedLegacyKey;
    let other: CreatedLegacyKey;
    let successorKey: string;
    let successor: ReturnType<typeof client>;
    let successorEmail: string;
    let otherSuccessorKey: string;

    beforeAll(async () => {
      clock.at = START;
      [mine, other] = [await register('HR sync'), await register('Payroll sync')];
      const minted = await mintSuccessor(mine.id);
      successorKey = minted.apiKey;
      successor = client(s.app, successorKey);
      successorEmail = minted.userEmail;
      otherSuccessorKey = (await mintSuccessor(other.id)).apiKey;
    });

    it('cannot replace another integration’s successor, disable or enable a key, or read the migration, whatever its key holds', async () => {
      const attacks: Array<['GET' | 'POST', string, object?]> = [
        ['POST', `/v4/admin/legacy-keys/${other.id}/successor`, { replace: true, capabilities: ['mcp:employees:read'] }],
        ['POST', `/v4/admin/legacy-keys/${mine.id}/successor`, { replace: true }],
        ['POST', `/v4/admin/legacy-keys/${other.id}/disable`, { reason: 'hostile' }],
        ['POST', `/v4/admin/legacy-keys/${other.id}/enable`, {}],
        ['GET', '/v4/admin/legacy-keys'],
        ['GET', `/v4/admin/legacy-keys/${other.id}`],
        ['GET', `/v4/admin/legacy-keys/${other.id}/plan`],
        ['GET', '/v4/admin/shadow-report'],
      ];
      for (const [method, path, body] of attacks) {
        const answer = method === 'GET' ? await successor.get(path) : await successor.post(path, body);
        expect([path, ...refusal(answer)]).toEqual([path, 403, 'non_personal_user']);
        expect(JSON.stringify(answer.body)).not.toContain('Payroll sync');
      }
      // Nothing changed: the other integration's successor and v2 key both still work.
      expect((await client(s.app, otherSuccessorKey).get('/v4/me')).status).toBe(200);
      expect(await callV2(other.rawKey!)).toBe(200);
      expect((await admin.get(`/v4/admin/legacy-keys/${other.id}`)).body.data.key.cutover.disabled).toBeNull();
    });

    it('keeps doing the integration’s work, and says it is non-personal', async () => {
      expect((await successor.get('/v4/employees')).status).toBe(200);
      expect((await successor.get('/v4/company/addresses')).status).toBe(200);
      const created = await successor.post('/v4/company/addresses', {
        companyId: s.demo.companies.acme,
        ...officeAddress(`Integration office ${backend}`),
      });
      expect(created.status).toBe(201);
      expect((await successor.get('/v4/me')).body.data.user).toMatchObject({ role: 'admin', nonPersonal: true });
      expect((await admin.get('/v4/me')).body.data.user).toMatchObject({ role: 'admin', nonPersonal: false });
    });

    it('is refused through svc too', async () => {
      const result = await svc(['--api-url', s.baseUrl, '--allow-localhost', '--format', 'json', '--api-key', successorKey, 'legacy-keys', 'disable', other.id, '--yes'], isolatedEnv());
      expect(result.code).toBe(4);
      expect(JSON.parse(result.stdout).error.code).toBe('non_personal_user');
      expect(await callV2(other.rawKey!)).toBe(200);
    });

    it('signed in on the pages, its user gets neither the dashboard, the plan nor the forms', async () => {
      await setUserPassword(s.core.db, successorEmail, DEMO_PASSWORD);
      const browser = new FormBrowser();
      expect((await browser.signIn(s.baseUrl, successorEmail)).status).toBe(303);
      for (const path of ['/app/migration', '/app/migration.json', `/app/migration/keys/${other.id}/plan`]) {
        expect([path, (await browser.fetch(`${s.baseUrl}${path}`)).status]).toEqual([path, 403]);
      }
      const csrf = csrfOf(await (await browser.fetch(`${s.baseUrl}/app/developers/api-keys`)).text());
      for (const action of ['successor', 'disable', 'enable']) {
        const form: Record<string, string> = action === 'successor' ? { _csrf: csrf, capabilities: 'mcp:employees:read', replace: 'true' } : { _csrf: csrf };
        expect([action, (await browser.fetch(`${s.baseUrl}/app/migration/keys/${other.id}/${action}`, { form })).status]).toEqual([action, 403]);
      }
      expect(await callV2(other.rawKey!)).toBe(200);
      expect((await client(s.app, otherSuccessorKey).get('/v4/me')).status).toBe(200);
    });

    it('leaves a human admin able to administer, with a key holding the company capabilities', async () => {
      const replaced = await mintSuccessor(other.id);
      expect((await client(s.app, replaced.apiKey).get('/v4/me')).status).toBe(200);
      expect((await client(s.app, otherSuccessorKey).get('/v4/me')).status).toBe(401);
      otherSuccessorKey = replaced.apiKey;
    });
  });

  describe('give admins an undo for a disable until the sunset', () => {
    it('disable → v2 refused → enable → v2 served, recorded with who, when and why; the policy waits a full quiet period again', async () => {
      clock.at = START;
      const legacy = await register('Undo');
      expect(await callV2(legacy.rawKey!)).toBe(200);
      // Called a moment ago, so only a forced disable goes through: the mistake the undo is for.
      const disabled = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, { force: true, reason: 'looked quiet' });
      expect(disabled.status).toBe(200);
      expect(await callV2(legacy.rawKey!)).toBe(401);

      clock.advance(1);
      const enabled = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, { reason: 'still used by payroll, ticket OPS-13' });
      expect(enabled.status).toBe(200);
      expect(enabled.body.data.key.disabledAt).toBeNull();
      expect(enabled.body.data.key.cutover).toMatchObject({
        stage: 'v2_only',
        disabled: null,
        enabled: { at: '2026-11-03T09:00:00.000Z', by: 'admin', reason: 'still used by payroll, ticket OPS-13' },
      });
      expect(enabled.body.data.key.bridgeKeyId).not.toBe(disabled.body.data.key.bridgeKeyId);
      expect(await callV2(legacy.rawKey!)).toBe(200);
      expect(refusal(await admin.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, {}))).toEqual([409, 'legacy_key_active']);

      // The automatic policy disables the quiet key; undone, it is not disabled again until quiet once more.
      const successorKey = (await mintSuccessor(legacy.id)).apiKey;
      expect((await client(s.app, successorKey).get('/v4/employees')).status).toBe(200);
      clock.advance(15);
      expect((await autoDisableQuietKeys(s.core)).map((k) => k.id)).toContain(legacy.id);
      expect(await callV2(legacy.rawKey!)).toBe(401);
      const undone = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, {});
      expect(undone.body.data.key.cutover).toMatchObject({ stage: 'successor_working', enabled: { by: 'admin', reason: `enabled again by ${s.demo.emails.admin}` } });
      expect((await autoDisableQuietKeys(s.core)).map((k) => k.id)).not.toContain(legacy.id);
      expect(await callV2(legacy.rawKey!)).toBe(200);
    });

    it('refuses a key of another company (404), a key without mcp:company:write, and any undo after the sunset', async () => {
      clock.at = START;
      const legacy = await register('Sunset');
      await admin.post(`/v4/admin/legacy-keys/${legacy.id}/disable`, { force: true, reason: 'sunset test' });
      const reader = client(s.app, (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:company:read'], 'company reader')).rawKey);
      expect(refusal(await reader.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, {}))).toEqual([403, 'missing_capability']);
      expect(refusal(await client(s.app, s.demo.apiKeys.manager).post(`/v4/admin/legacy-keys/${legacy.id}/enable`, {}))).toEqual([403, 'missing_capability']);
      expect(refusal(await admin.post('/v4/admin/legacy-keys/lk_missing/enable', {}))).toEqual([404, 'not_found']);
      expect(refusal(await admin.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, { reason: '' }))).toEqual([400, 'validation_failed']);

      clock.at = new Date('2027-01-01T00:00:00Z');
      const late = await admin.post(`/v4/admin/legacy-keys/${legacy.id}/enable`, {});
      expect(refusal(late)).toEqual([409, 'sunset_passed']);
      expect(late.body.error.message).toBe(`v2 reached its sunset on 2027-01-01: legacy key ${legacy.id} stays disabled`);
      expect((await admin.get(`/v4/admin/legacy-keys/${legacy.id}`)).body.data.key.cutover.disabled).not.toBeNull();
      clock.at = START;
    });

    it('undoes through svc legacy-keys enable and the dashboard’s form', async () => {
      clock.at = START;
      const [viaCli, viaPage] = [await register('svc undo'), await register('page undo')];
      for (const key of [viaCli, viaPage]) await admin.post(`/v4/admin/legacy-keys/${key.id}/disable`, { force: true, reason: 'undo test' });

      const args = ['--api-url', s.baseUrl, '--allow-localhost', '--format', 'json', '--api-key', s.demo.apiKeys.admin, 'legacy-keys', 'enable', viaCli.id, '--reason', 'undo from svc'];
      const result = await svc(args, isolatedEnv());
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).data.key.cutover.enabled).toMatchObject({ by: 'admin', reason: 'undo from svc' });
      expect(await callV2(viaCli.rawKey!)).toBe(200);

      const browser = new FormBrowser();
      await browser.signIn(s.baseUrl, s.demo.emails.admin);
      const page = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      const action = `${s.baseUrl}/app/migration/keys/${viaPage.id}/enable`;
      expect(page).toContain(`action="/app/migration/keys/${viaPage.id}/enable"`);
      expect((await browser.fetch(action, { form: { _csrf: 'forged' } })).status).toBe(403);
      const posted = await browser.fetch(action, { form: { _csrf: csrfOf(page) } });
      expect([posted.status, posted.headers.get('location')]).toEqual([303, '/app/migration']);
      expect(await callV2(viaPage.rawKey!)).toBe(200);
      const after = await (await browser.fetch(`${s.baseUrl}/app/migration`)).text();
      expect(after).toContain(`Enabled again 2026-11-02 09:00 UTC by an admin: enabled again by ${s.demo.emails.admin} on the dashboard`);
    });
  });

  describe('/app/migration.json ignores an API key’s capabilities', () => {
    const reportWith = async (apiKey: string) => {
      const response = await fetch(`${s.baseUrl}/app/migration.json`, { headers: { 'x-api-key': apiKey } });
      const text = await response.text();
      return { status: response.status, code: response.ok ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code, text };
    };

    it('refuses an admin key narrowed to inventory and a successor key, as /v4/admin/* does; serves a company reader', async () => {
      clock.at = START;
      const legacy = await register('Dashboard JSON');
      const narrow = (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:inventory:read'], 'inventory only')).rawKey;
      const successorKey = (await mintSuccessor(legacy.id)).apiKey;
      for (const [key, code] of [[narrow, 'missing_capability'], [successorKey, 'non_personal_user']] as const) {
        const answer = await reportWith(key);
        expect([answer.status, answer.code]).toEqual([403, code]);
        if (code === 'missing_capability') {
          expect(JSON.parse(answer.text).error.message).toBe('The migration dashboard requires mcp:company:read, which this credential lacks');
        }
        expect(answer.text).not.toContain(legacy.id);
        expect([(await client(s.app, key).get('/v4/admin/legacy-keys')).status]).toEqual([403]);
      }
      const reader = (await mintKeyForUser(s.core.db, s.demo.emails.admin, ['mcp:company:read'], 'company reader')).rawKey;
      const served = await reportWith(reader);
      expect(served.status).toBe(200);
      expect(served.text).toContain(legacy.id);
    });
  });
});
