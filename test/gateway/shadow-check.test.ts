import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../src/kit/config.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import type { CompareRules } from '../../src/legacy/mappings.js';
import type { ShadowReport } from '../../src/migration/shadow-check.js';
import { compareBodies } from '../../src/migration/shadow-diff.js';
import { FormBrowser } from '../oauth/support.js';
import { backends, client, freePort, startTestApp, type ListeningTestApp, EVENTUALLY } from '../helpers/harness.js';
import { LegacyV2Server, startShadowedApp } from '../helpers/legacy-v2.js';

/*
 * The shadow check against a legacy v2 API on loopback (test/helpers/legacy-v2.ts), with
 * differences planted on purpose. Callers speak real HTTP to the service.
 */

type Doc = Record<string, unknown>;

// Outside the brownouts of sunset.yaml, so v2 answers.
const NOW = new Date('2026-06-01T12:00:00Z');
const rules = (partial: Partial<CompareRules> = {}): CompareRules => ({ unordered: [], volatile: [], added_in_v4: [], ...partial });

describe('comparing a legacy v2 answer with its translation', () => {
  it('ignores key order', () => {
    expect(compareBodies({ a: 1, b: { c: [1, 2], d: null } }, { b: { d: null, c: [1, 2] }, a: 1 }, rules())).toEqual([]);
  });

  it('compares an undeclared list element by element, with array indexes written []', () => {
    expect(compareBodies({ tags: ['a', 'b'] }, { tags: ['b', 'a', 'c'] }, rules())).toEqual([
      { path: 'tags[]', kind: 'changed', legacy: 'a', translated: 'b' },
      { path: 'tags[]', kind: 'changed', legacy: 'b', translated: 'a' },
      { path: 'tags[]', kind: 'added', translated: 'c' },
    ]);
  });

  it('matches the elements of an unordered list by key: a missing element is one difference, not a cascade', () => {
    const legacy = [{ id: 'a', city: 'Berlin' }, { id: 'b', city: 'Paris' }, { id: 'c', city: 'Rome' }];
    const translated = [{ id: 'c', city: 'Roma' }, { id: 'a', city: 'Berlin' }];
    expect(compareBodies(legacy, translated, rules({ unordered: [{ elements: '[]', by: 'id' }] }))).toEqual([
      { path: '[]', kind: 'missing', legacy: { id: 'b', city: 'Paris' } },
      { path: '[].city', kind: 'changed', legacy: 'Rome', translated: 'Roma' },
    ]);
  });

  it('matches the elements of an unordered list without key by value, nested lists included', () => {
    const unordered = rules({ unordered: [{ elements: '[]', by: 'id' }, { elements: '[].productIds[]' }] });
    expect(compareBodies([{ id: 'o1', productIds: ['p1', 'p2'] }], [{ id: 'o1', productIds: ['p2', 'p1'] }], unordered)).toEqual([]);
    expect(compareBodies([{ id: 'o1', productIds: ['p1', 'p2'] }], [{ id: 'o1', productIds: ['p2', 'p3'] }], unordered)).toEqual([
      { path: '[].productIds[]', kind: 'missing', legacy: 'p1' },
      { path: '[].productIds[]', kind: 'added', translated: 'p3' },
    ]);
  });

  it('compares a volatile field for presence only', () => {
    const volatile = rules({ volatile: ['updatedAt'] });
    expect(compareBodies({ updatedAt: '2026-01-01T00:00:00+00:00' }, { updatedAt: '2026-01-01T00:00:00.000Z' }, volatile)).toEqual([]);
    expect(compareBodies({ updatedAt: '2026-01-01T00:00:00+00:00' }, {}, volatile)).toEqual([
      { path: 'updatedAt', kind: 'missing', legacy: '2026-01-01T00:00:00+00:00' },
    ]);
  });

  it('accepts a field v4 added when v2 lacks it, and still compares it when v2 has it', () => {
    const added = rules({ added_in_v4: ['jobTitle'] });
    expect(compareBodies({ id: 'e1' }, { id: 'e1', jobTitle: 'CTO' }, added)).toEqual([]);
    expect(compareBodies({ id: 'e1', jobTitle: 'CEO' }, { id: 'e1', jobTitle: 'CTO' }, added)).toEqual([
      { path: 'jobTitle', kind: 'changed', legacy: 'CEO', translated: 'CTO' },
    ]);
    expect(compareBodies({ id: 'e1' }, { id: 'e1', taxId: 'X' }, added)).toEqual([{ path: 'taxId', kind: 'added', translated: 'X' }]);
  });

  it('reports a record answered as a list as one change of the whole body', () => {
    expect(compareBodies({ id: 'e1' }, [{ id: 'e1' }], rules())).toEqual([{ path: '(body)', kind: 'changed', legacy: { id: 'e1' }, translated: [{ id: 'e1' }] }]);
  });
});

describe('shadow check settings', () => {
  it('is off by default and needs the legacy API it compares with', () => {
    expect(loadConfig({}).shadowSampleRate).toBe(0);
    expect(() => loadConfig({ SHADOW_SAMPLE_RATE: '0.1' })).toThrow(new ConfigError('Invalid configuration:\n  SHADOW_SAMPLE_RATE: needs LEGACY_V2_UPSTREAM, the legacy v2 API to compare with'));
    expect(() => loadConfig({ SHADOW_SAMPLE_RATE: '1.5', LEGACY_V2_UPSTREAM: 'http://127.0.0.1:1' })).toThrow(/SHADOW_SAMPLE_RATE: .*1/);
    expect(loadConfig({ SHADOW_SAMPLE_RATE: '0.05', LEGACY_V2_UPSTREAM: 'http://127.0.0.1:1' }).shadowSampleRate).toBe(0.05);
  });
});

describe.each(backends())('shadow check against a legacy v2 API [%s]', (backend) => {
  let keys: Map<string, string>;
  let t: ListeningTestApp;
  let legacy: LegacyV2Server;
  let rawKey: string;
  let legacyKeyId: string;

  beforeAll(async () => {
    ({ t, legacy, keys } = await startShadowedApp(backend, NOW));
    const key = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'HR sync',
      scopes: [
        'api.employees.getAll',
        'api.employee.get',
        'api.employee.deliveryAddress.get',
        'api.employee.deliveryAddress.update',
        'api.teams.getAll',
        'api.team.get',
        'api.teams.create',
        'api.team.update',
        'api.catalogs.getAll',
      ],
    });
    rawKey = key.rawKey!;
    legacyKeyId = key.id;
    keys.set(rawKey, t.demo.companies.acme);
  });
  afterAll(async () => {
    await legacy?.stop();
    await t?.close();
  });

  /** A v2 call as the integration makes it. */
  const v2 = async (method: string, path: string, body?: Doc) => {
    const response = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { 'x-api-key': rawKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const report = async (apiKey = t.demo.apiKeys.admin): Promise<ShadowReport> => {
    const res = await client(t.app, apiKey).get('/v4/admin/shadow-report');
    expect(res.status).toBe(200);
    return res.body.data as ShadowReport;
  };
  const settledChecks = (r: ShadowReport) => r.totals.compared + r.totals.legacySlow + r.totals.legacyError + r.totals.dropped;
  /** A sampled read, once its shadow check is done (one at a time: SHADOW_MAX_IN_FLIGHT is 1). */
  const checkedRead = async (path: string) => {
    const before = settledChecks(await report());
    const res = await v2('GET', path);
    await vi.waitFor(async () => expect(settledChecks(await report())).toBe(before + 1), EVENTUALLY);
    return res;
  };
  const scrape = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  const routeOf = (r: ShadowReport, route: string) => r.routes.find((entry) => entry.route === route);

  it('finds no difference where the legacy API answers alike in its own key order, list order and timestamp format', async () => {
    const { eve } = t.demo.employees;
    const { engineering } = t.demo.teams;
    const before = (await report()).totals;
    const since = legacy.received.length;
    const paths = [
      '/v2/employees',
      `/v2/employees?teamId=${engineering}`,
      `/v2/employees/${eve}`,
      `/v2/employees/${eve}/deliveryAddress`,
      '/v2/teams',
      `/v2/teams/${engineering}`,
    ];
    for (const path of paths) expect((await checkedRead(path)).status, path).toBe(200);
    // Refused alike: only the statuses are compared.
    expect((await checkedRead('/v2/employees/emp_missing')).status).toBe(404);

    const after = await report();
    expect(after.totals).toEqual({ ...before, compared: before.compared + 7, equal: before.equal + 7 });
    expect(after.examples).toEqual([]);
    // The same path and query, with the caller's own key, as passthrough forwards them.
    expect(legacy.received.slice(since)).toEqual([...paths, '/v2/employees/emp_missing'].map((path) => ({ method: 'GET', url: path.slice(3), apiKey: rawKey })));
    const metrics = await scrape();
    expect(metrics).toContain('svc_v2_shadow_checks_total{route="GET /employees/:id",result="equal"} 2');
    expect(metrics).toContain('svc_v2_shadow_checks_total{route="GET /employees",result="equal"} 2');
    expect(metrics).not.toMatch(/^svc_v2_shadow_differences_total\{/m);
  });

  it('counts planted differences per route and field path, and keeps redacted examples; the caller still gets the translation', async () => {
    const { eve, dana } = t.demo.employees;
    const { engineering } = t.demo.teams;
    legacy.plant = (path, body) => {
      const doc = body as Doc;
      // A field renamed: v2 called it secondaryMail.
      if (path === `/employees/${eve}`) {
        const { secondaryEmail, ...rest } = doc;
        return { ...rest, secondaryMail: secondaryEmail };
      }
      // A value changed.
      if (path === `/employees/${dana}`) return { ...doc, deliveryAddress: { ...(doc.deliveryAddress as Doc), city: 'Atlantis' } };
      // An element the translation misses, and a value changed in every element.
      if (path === '/employees') {
        const list = (body as Doc[]).map((e) => ({ ...e, deliveryAddress: { ...(e.deliveryAddress as Doc), zipCode: '00000' } }));
        return [...list, { ...list[0], id: 'emp_phantom', email: 'phantom@acme.example' }];
      }
      // Secrets in fields the translation lacks: never shown.
      if (path === `/teams/${engineering}`) return { ...doc, pinCode: '4711', legacyNote: `issued with ${rawKey}` };
      return body;
    };
    try {
      const renamed = await checkedRead(`/v2/employees/${eve}`);
      expect(renamed.body).toHaveProperty('secondaryEmail');
      expect(renamed.body).not.toHaveProperty('secondaryMail');
      const changed = await checkedRead(`/v2/employees/${dana}`);
      await checkedRead('/v2/employees');
      await checkedRead(`/v2/teams/${engineering}`);

      const r = await report();
      expect(routeOf(r, 'GET /employees/:id')?.differences).toEqual([
        { path: 'deliveryAddress.city', kind: 'changed', count: 1 },
        { path: 'secondaryEmail', kind: 'added', count: 1 },
        { path: 'secondaryMail', kind: 'missing', count: 1 },
      ]);
      // Counted once per compared answer, whatever the number of elements.
      expect(routeOf(r, 'GET /employees')?.differences).toEqual([
        { path: '[]', kind: 'missing', count: 1 },
        { path: '[].deliveryAddress.zipCode', kind: 'changed', count: 1 },
      ]);
      expect(routeOf(r, 'GET /teams/:teamId')?.differences).toEqual([
        { path: 'legacyNote', kind: 'missing', count: 1 },
        { path: 'pinCode', kind: 'missing', count: 1 },
      ]);
      expect(r.routes[0]!.different).toBeGreaterThanOrEqual(r.routes.at(-1)!.different);

      const [team, list, dana2, eve2] = r.examples;
      expect(team).toMatchObject({ route: 'GET /teams/:teamId', path: `/v2/teams/${engineering}`, legacyKeyId, moreDifferences: 0 });
      expect(team!.differences).toEqual([
        { path: 'pinCode', kind: 'missing', legacy: '[redacted]' },
        { path: 'legacyNote', kind: 'missing', legacy: '"issued with [redacted]"' },
      ]);
      expect(list!.differences[0]).toMatchObject({ path: '[].deliveryAddress.zipCode', kind: 'changed', legacy: '"00000"' });
      expect(dana2!.differences).toEqual([
        { path: 'deliveryAddress.city', kind: 'changed', legacy: '"Atlantis"', translated: JSON.stringify(changed.body.deliveryAddress.city) },
      ]);
      expect(eve2!.route).toBe('GET /employees/:id');
      expect(JSON.stringify(r)).not.toContain(rawKey);
      expect(JSON.stringify(r)).not.toContain('4711');

      const metrics = await scrape();
      expect(metrics).toContain('svc_v2_shadow_checks_total{route="GET /employees/:id",result="different"} 2');
      expect(metrics).toContain('svc_v2_shadow_differences_total{route="GET /employees/:id",path="deliveryAddress.city",kind="changed"} 1');
      expect(metrics).toContain('svc_v2_shadow_differences_total{route="GET /employees",path="[]",kind="missing"} 1');
      expect(metrics).not.toContain(eve);
    } finally {
      legacy.plant = (_path, body) => body;
    }
  });

  it('answers the caller while the legacy call is still open; a hung legacy API counts as slow, and samples beyond the bound are dropped', async () => {
    const before = (await report()).totals;
    legacy.mode = 'hang';
    try {
      const first = await v2('GET', '/v2/teams');
      expect(first.status).toBe(200);
      expect(Array.isArray(first.body)).toBe(true);
      // The caller holds its whole answer; the legacy API holds its call, unanswered.
      await vi.waitFor(() => expect(legacy.pending).toBe(1), EVENTUALLY);
      // One legacy call at a time (SHADOW_MAX_IN_FLIGHT=1): this sample is dropped, its caller served.
      const second = await v2('GET', `/v2/teams/${t.demo.teams.sales}`);
      expect(second.status).toBe(200);
      expect(second.body.id).toBe(t.demo.teams.sales);
      await vi.waitFor(async () => expect((await report()).totals.legacySlow).toBe(before.legacySlow + 1), { timeout: 10_000 });
      expect((await report()).totals).toEqual({ ...before, legacySlow: before.legacySlow + 1, dropped: before.dropped + 1 });
    } finally {
      legacy.mode = 'answer';
    }
  });

  it('counts a failing or unreachable legacy API as legacy_error, the caller unaffected', async () => {
    const before = (await report()).totals;
    legacy.mode = 'fail';
    try {
      const failing = await checkedRead('/v2/teams');
      expect(failing.status).toBe(200);
    } finally {
      legacy.mode = 'answer';
    }
    await legacy.stop();
    try {
      const down = await checkedRead(`/v2/employees/${t.demo.employees.eve}`);
      expect(down.status).toBe(200);
      expect(down.body.id).toBe(t.demo.employees.eve);
    } finally {
      await legacy.start();
    }
    expect((await report()).totals).toEqual({ ...before, legacyError: before.legacyError + 2 });
    expect(await scrape()).toContain('svc_v2_shadow_checks_total{route="GET /teams",result="legacy_error"} 1');
  });

  it('never mirrors writes, and forwards a read without successor once', async () => {
    const before = (await report()).totals;
    const since = legacy.received.length;
    const created = await v2('POST', '/v2/teams', { name: 'Shadow Writers' });
    expect(created.status).toBe(201);
    expect((await v2('PATCH', `/v2/teams/${created.body.id}`, { name: 'Shadow Editors' })).status).toBe(200);
    expect((await v2('PATCH', `/v2/employees/${t.demo.employees.eve}/deliveryAddress`, { city: 'Potsdam' })).status).toBe(200);
    expect((await v2('GET', '/v2/catalogs')).status).toBe(200);
    // A sampled read after the writes: once its check is done, any mirrored write would have arrived first.
    await checkedRead('/v2/teams');
    expect(legacy.received.slice(since)).toEqual([
      { method: 'GET', url: '/catalogs', apiKey: rawKey },
      { method: 'GET', url: '/teams', apiKey: rawKey },
    ]);
    expect((await report()).totals).toEqual({ ...before, compared: before.compared + 1, equal: before.equal + 1 });
  });

  it('shows each admin the findings of their own companies: REST, the dashboard and its JSON; refuses others', async () => {
    legacy.plant = (path, body) => (path === '/teams' ? (body as Doc[]).slice(1) : body);
    try {
      await checkedRead('/v2/teams');
    } finally {
      legacy.plant = (_path, body) => body;
    }
    const manager = await client(t.app, t.demo.apiKeys.manager).get('/v4/admin/shadow-report');
    expect(manager.status).toBe(403);
    expect(manager.body.error.code).toBe('admin_only');

    await createUser(t.core.db, { email: 'ops@globex.example', displayName: 'Olga Ops', role: 'admin', companyIds: [t.demo.companies.globex] });
    const globexKey = (await mintKeyForUser(t.core.db, 'ops@globex.example', ['mcp:company:read'], 'globex ops')).rawKey;
    expect(await report(globexKey)).toMatchObject({ enabled: true, sampleRate: 1, routes: [], examples: [] });

    const acme = await report();
    expect(acme.examples[0]).toMatchObject({ route: 'GET /teams', differences: [{ path: '[]', kind: 'added' }] });

    const browser = new FormBrowser();
    expect((await browser.signIn(t.baseUrl, t.demo.emails.admin)).status).toBe(303);
    const page = await (await browser.fetch(`${t.baseUrl}/app/migration`)).text();
    expect(page).toContain('<h2 id="shadow-heading">Shadow check of the translation</h2>');
    expect(page).toMatch(/<table id="shadow-routes">[\s\S]*<code>GET \/teams<\/code>/);
    expect(page).toMatch(/<table id="shadow-examples">[\s\S]*<code>\[\]<\/code> \(added\)/);
    expect(page).not.toContain(rawKey);
    const json = (await (await browser.fetch(`${t.baseUrl}/app/migration.json`)).json()) as { shadow: ShadowReport };
    expect(json.shadow.totals).toEqual(acme.totals);
    expect(json.shadow.examples[0]).toEqual(acme.examples[0]);
  });
});

describe('shadow check left off', () => {
  it('sends nothing to the legacy API without a sample rate', async () => {
    const legacyPort = await freePort();
    const t = await startTestApp('pglite', { config: { legacyV2Upstream: `http://127.0.0.1:${legacyPort}` }, core: { now: () => NOW } });
    const key = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'off', scopes: ['api.teams.getAll'] });
    const legacy = new LegacyV2Server(t.core.db, new Map([[key.rawKey!, t.demo.companies.acme]]), legacyPort);
    await legacy.start();
    try {
      expect((await client(t.app, key.rawKey).get('/v2/teams')).status).toBe(200);
      // Off, nothing is held for a comparison: the answer is the whole of the work.
      expect(legacy.received).toEqual([]);
      expect((await client(t.app, t.demo.apiKeys.admin).get('/v4/admin/shadow-report')).body.data).toMatchObject({ enabled: false, routes: [] });
    } finally {
      await legacy.stop();
      await t.close();
    }
  });
});
