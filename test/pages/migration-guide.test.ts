import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey, resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import { ROUTES_FILE, SCOPES_FILE, SUNSET_FILE } from '../../src/legacy/mappings.js';
import { buildMigrationGuide } from '../../src/migration/migration-guide.js';
import { backends, startListeningApp, startTestApp, type ListeningTestApp } from '../helpers/harness.js';
import { loadShippedWith } from '../helpers/maps.js';

/*
 * The migration guide as a v2 integration meets it: the deprecation link of a v2 answer leads to
 * the endpoint's section of the served page; the JSON is the same guide.
 */

/** The targets of a Link header by relation. */
function links(header: string | null): Record<string, string> {
  return Object.fromEntries([...(header ?? '').matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)].map((m) => [m[2]!, m[1]!]));
}

describe.each(backends())('the served migration guide [%s]', (backend) => {
  let s: ListeningTestApp;
  let v2Key: string;
  let v4Key: string;

  beforeAll(async () => {
    s = await startListeningApp(backend);
    const created = await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'guide reader', scopes: ['api.employee.get', 'api.catalogs.getAll'] });
    v2Key = created.rawKey!;
    const resolved = await resolveLegacyKey(s.core, v2Key);
    if (resolved.status !== 'active' || !resolved.bridgeApiKey) throw new Error('expected a bridged key');
    v4Key = resolved.bridgeApiKey;
  });
  afterAll(async () => s.close());

  it('is a page with a section per v2 endpoint, the list of them, the setup and no script', async () => {
    const response = await fetch(`${s.baseUrl}/docs/migration`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).not.toContain('<script');
    expect(page).toContain('<h1>Migrating from API v2 to v4</h1>');
    expect(page).toContain(`BASE_URL=${s.baseUrl}`);
    for (const route of s.core.mappings.routes) {
      const anchor = `${route.method}${route.path}`.toLowerCase().replace(/[^a-z0-9]+/g, '-');
      expect(page, anchor).toContain(`<section id="${anchor}"`);
      expect(page, anchor).toContain(`<a href="#${anchor}"><code>${route.method} /v2${route.path}</code></a>`);
    }
    expect(page).toContain('<a href="/docs/migration.json">');
    expect(page).toContain('<a href="/openapi-v2.json">');
    // The curl lines, escaped into the page, read back as written.
    expect(page).toContain('curl -sS &#34;$BASE_URL/v2/employees/$EMPLOYEE_ID&#34; -H &#34;X-API-KEY: $V2_KEY&#34;');
  });

  it('serves the same guide as JSON', async () => {
    const response = await fetch(`${s.baseUrl}/docs/migration.json`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(buildMigrationGuide(s.core.mappings))));
  });

  it('is where a v2 answer’s deprecation link leads, and its successor link is the v4 call', async () => {
    const employee = s.demo.employees.eve;
    const v2 = await fetch(`${s.baseUrl}/v2/employees/${employee}`, { headers: { 'x-api-key': v2Key } });
    expect(v2.status).toBe(200);
    const { deprecation, 'successor-version': successor } = links(v2.headers.get('link'));
    const guide = new URL(deprecation!, v2.url);
    expect(guide.href).toBe(`${s.baseUrl}/docs/migration#get-employees-id`);
    const page = await (await fetch(guide)).text();
    expect(page).toContain(`<section id="${guide.hash.slice(1)}"`);
    const v4 = await fetch(new URL(successor!, v2.url), { headers: { 'x-api-key': v4Key } });
    expect(v4.status).toBe(200);
    expect(((await v4.json()) as { data: { id: string } }).data.id).toBe(employee);
  });

  it('is, with the key’s own plan, the only link of a v2 endpoint without a v4 successor', async () => {
    const v2 = await fetch(`${s.baseUrl}/v2/catalogs`, { headers: { 'x-api-key': v2Key } });
    expect(v2.status).toBe(501);
    expect(links(v2.headers.get('link'))).toEqual({ deprecation: '/docs/migration#get-catalogs', help: '/v2/migration-plan' });
    const page = await (await fetch(`${s.baseUrl}/docs/migration`)).text();
    const section = /<section id="get-catalogs"[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect(section).toContain('<strong>No v4 successor:</strong> catalogs and collections are outside the migrated groups.');
    expect(section).toContain('Instead: to buy devices');
  });
});

describe('the migration guide from edited maps', () => {
  it('escapes what the maps say, and follows an operator’s own guide URL', async () => {
    const mappings = loadShippedWith(
      [SCOPES_FILE, 'reason: no v4 order update', 'reason: "no <script>alert(1)</script> & more"'],
      [ROUTES_FILE, 'guide: { example: { name: Platform } }', 'guide: { example: { name: "</code><b>bold</b>" } }'],
      [SUNSET_FILE, "migrationGuide: '/docs/migration#{anchor}'", "migrationGuide: 'https://wiki.example/v2#{anchor}'"],
    );
    const t = await startTestApp('pglite', { core: { mappings } });
    try {
      const page = (await t.app.inject({ url: '/docs/migration' })).body;
      expect(page).toContain('no &#60;script&#62;alert(1)&#60;/script&#62; &#38; more');
      expect(page).not.toContain('<script>');
      expect(page).toContain('&#60;/code&#62;&#60;b&#62;bold&#60;/b&#62;');
      expect(page).not.toContain('<b>bold</b>');
      const v2Doc = (await t.app.inject({ url: '/openapi-v2.json' })).json();
      expect(v2Doc.paths['/v2/teams'].get.externalDocs.url).toBe('https://wiki.example/v2#get-teams');
      const created = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'override', scopes: ['api.teams.getAll'] });
      const v2 = await t.app.inject({ url: '/v2/teams', headers: { 'x-api-key': created.rawKey! } });
      expect(v2.statusCode).toBe(200);
      expect(links(String(v2.headers.link))).toEqual({ 'successor-version': '/v4/teams', deprecation: 'https://wiki.example/v2#get-teams', help: '/v2/migration-plan' });
    } finally {
      await t.close();
    }
  });
});
