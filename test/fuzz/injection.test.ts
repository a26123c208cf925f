import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { fuzz, FUZZ_SEED, INJECTIONS, UNICODE_EDGES, encodePart } from './support/fuzz.js';

/*
 * Injection strings are data: a valid one is stored and read back verbatim, the tables survive,
 * and LIKE wildcards in a search match themselves. Plus the regression tests of the failures the
 * fuzz suites found, named after the bug.
 */

const RUNS = { pglite: 40, postgres: 15 } as const;

/** Strings Text() accepts: no control characters, not blank, short enough once suffixed. */
const storableText = fc
  .oneof(fc.constantFrom(...INJECTIONS, ...UNICODE_EDGES), fc.string({ unit: 'binary', maxLength: 30 }))
  .map((s) => s.replace(/\p{Cc}/gu, '').slice(0, 80))
  .filter((s) => s.trim().length > 0 && !/[\ud800-\udfff]/.test(s));

describe.each(backends())('injection strings are stored verbatim [%s]', (backend) => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let acme: string;
  let counter = 0;

  beforeAll(async () => {
    t = await startTestApp(backend);
    api = client(t.app, t.demo.apiKeys.admin);
    acme = t.demo.companies.acme;
  });
  afterAll(async () => t?.close());

  it("round-trips a team named '); DROP TABLE teams;-- and the table survives", async () => {
    const name = "'); DROP TABLE teams;--";
    const created = await api.post('/v4/teams', { name, companyId: acme });
    expect(created.status).toBe(201);
    expect((await api.get(`/v4/teams/${created.body.data.id}`)).body.data.name).toBe(name);
    const listed = await api.get(`/v4/teams?companyId=${acme}&query=${encodePart('DROP TABLE')}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.teams.map((team: { name: string }) => team.name)).toEqual([name]);
  });

  it(`stores any valid hostile team name and employee field exactly (seed ${FUZZ_SEED})`, async () => {
    await fuzz(
      fc.asyncProperty(storableText, async (text) => {
        const name = `${text} #${counter++}`.trim();
        const team = await api.post('/v4/teams', { name, companyId: acme });
        expect(team.status, JSON.stringify(team.body)).toBe(201);
        expect((await api.get(`/v4/teams/${team.body.data.id}`)).body.data.name).toBe(name);
        const employee = await api.post('/v4/employees', {
          companyId: acme,
          displayName: name,
          email: `fuzz${counter}@acme.example`,
          jobTitle: text.trim(),
          city: text.trim(),
        });
        expect(employee.status, JSON.stringify(employee.body)).toBe(201);
        const read = (await api.get(`/v4/employees/${employee.body.data.id}`)).body.data;
        expect([read.displayName, read.jobTitle, read.city]).toEqual([name, text.trim(), text.trim()]);
      }),
      RUNS[backend],
    );
    // Every table the strings aimed at still answers.
    for (const url of ['/v4/teams', '/v4/employees', '/v4/inventory', '/v4/orders'].map((u) => `${u}?companyId=${acme}`)) {
      expect((await api.get(url)).status, url).toBe(200);
    }
  });

  it(`a search matches its text literally: % and _ are no wildcards (seed ${FUZZ_SEED})`, async () => {
    for (const name of ['100% remote', 'under_score', 'plain team']) await api.post('/v4/teams', { name, companyId: acme });
    const query = fc.oneof(fc.constantFrom('%', '_', '%_%', '\\', "'", '%%', '_e'), fc.stringMatching(/^[ -~]{1,6}$/));
    await fuzz(
      fc.asyncProperty(query, async (q) => {
        const listed = await api.get(`/v4/teams?companyId=${acme}&limit=50&query=${encodePart(q)}`);
        expect(listed.status).toBe(200);
        for (const team of listed.body.data.teams as { name: string }[]) expect(team.name.toLowerCase()).toContain(q.toLowerCase());
      }),
      RUNS[backend],
    );
  });

  // Regression: a NUL in a search or an id reached PostgreSQL, which cannot store it, and answered 500.
  it('refuses a NUL character in ids and search queries with a 400 naming the field', async () => {
    for (const url of ['/v4/teams?query=a%00b', '/v4/employees?query=%00', '/v4/inventory?query=%00', '/v4/orders?query=%00', '/v4/company/addresses?query=%00']) {
      const answer = await api.get(`${url}&companyId=${acme}`);
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.details[0]).toMatchObject({ field: 'query', message: 'must not contain the NUL character (U+0000)' });
    }
    for (const url of ['/v4/teams/a%00', '/v4/orders/%00', '/v4/products/%00', '/v4/employees/%00/devices', '/v4/admin/legacy-keys/%00']) {
      const answer = await api.get(url);
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.details[0].field).toBe('id');
    }
  });
});
