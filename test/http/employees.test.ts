import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { setUserDisabled } from '../../src/domain/admin.js';

const names = (list: Array<{ displayName: string }>) => list.map((e) => e.displayName).sort();

describe.each(backends())('employees [%s]', (backend) => {
  let t: TestApp;
  let admin: ReturnType<typeof client>;
  let manager: ReturnType<typeof client>;
  let acme: { companyId: string };
  beforeAll(async () => {
    t = await startTestApp(backend);
    admin = client(t.app, t.demo.apiKeys.admin);
    manager = client(t.app, t.demo.apiKeys.manager);
    acme = { companyId: t.demo.companies.acme };
  });
  afterAll(() => t.close());

  // Reads first: the write tests below add employees.

  it('derives the countries from stored delivery addresses, within the caller scope', async () => {
    // Noah (US) has no address; US still appears because Eve has one.
    const all = await admin.get('/v4/employees/countries');
    expect(all.status).toBe(200);
    expect(all.body.data).toEqual({ countries: ['DE', 'ES', 'GB', 'SE', 'US'] });
    const globex = await admin.get(`/v4/employees/countries?companyId=${t.demo.companies.globex}`);
    expect(globex.body.data.countries).toEqual(['DE', 'GB']);
    const scoped = await manager.get('/v4/employees/countries');
    expect(scoped.body.data.countries).toEqual(['DE', 'SE']);
    const strayField = await admin.get('/v4/employees/countries?region=EU');
    expect(strayField.status).toBe(400);
    expect(strayField.body.error.details[0]).toMatchObject({ field: 'region', rule: 'unknown_field' });
  });

  it('counts an employee without an address out of the countries until one is stored', async () => {
    const created = await admin.post('/v4/employees', { ...acme, displayName: 'Pia Portugal', email: 'pia@acme.example', country: 'PT' });
    expect(created.status).toBe(201);
    expect((await admin.get('/v4/employees/countries')).body.data.countries).not.toContain('PT');
    await admin.patch(`/v4/employees/${created.body.data.id}`, { addressOne: 'Rua Augusta 1', city: 'Lisboa' });
    expect((await admin.get('/v4/employees/countries')).body.data.countries).toContain('PT');
  });

  it('lists employees of every company an admin administers, in stable pages', async () => {
    const first = await admin.get('/v4/employees?limit=3');
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ page: 1, pageSize: 3 });
    const total = first.body.data.totalCount;
    expect(total).toBeGreaterThanOrEqual(8);
    expect(first.body.data.employees).toHaveLength(3);
    const second = await admin.get(`/v4/employees?limit=3&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.page).toBe(2);
    const byPage = await admin.get('/v4/employees?limit=3&page=2');
    expect(byPage.body.data.employees).toEqual(second.body.data.employees);
    const companies = new Set((await admin.get('/v4/employees?limit=50')).body.data.employees.map((e: { companyId: string }) => e.companyId));
    expect(companies).toEqual(new Set([t.demo.companies.acme, t.demo.companies.globex]));
  });

  it('truncates limit above 50 and rejects a cursor issued for other filters', async () => {
    const big = await admin.get('/v4/employees?limit=500');
    expect(big.status).toBe(200);
    expect(big.body.data.pageSize).toBe(50);
    const first = await admin.get('/v4/employees?limit=1');
    const mixed = await admin.get(`/v4/employees?limit=1&country=DE&cursor=${first.body.data.nextCursor}`);
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.code).toBe('invalid_cursor');
  });

  it('filters by free text on name or email, escaping LIKE wildcards', async () => {
    const byName = await admin.get('/v4/employees?query=berger');
    expect(names(byName.body.data.employees)).toEqual(['Hans Berger']);
    const byEmail = await admin.get('/v4/employees?query=GLOBEX.example');
    expect(names(byEmail.body.data.employees)).toEqual(['Greta Globex', 'Sam Support']);
    const wildcard = await admin.get(`/v4/employees?query=${encodeURIComponent('%')}`);
    expect(wildcard.body.data.totalCount).toBe(0);
  });

  it('filters by team name (any case) and by country (lower case accepted)', async () => {
    const team = await admin.get(`/v4/employees?teamName=engineering&companyId=${t.demo.companies.acme}`);
    expect(names(team.body.data.employees)).toEqual(['Dana Developer', 'Erik Engineer']);
    expect(team.body.data.employees[0].teamName).toBe('Engineering');
    const country = await admin.get('/v4/employees?country=de');
    expect(names(country.body.data.employees)).toEqual(['Dana Developer', 'Greta Globex', 'Hans Berger']);
    const bad = await admin.get('/v4/employees?country=Germany');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toMatchObject({ field: 'country', rule: 'invalid_format' });
  });

  it('reads one employee with the delivery address and the login flag', async () => {
    const res = await admin.get(`/v4/employees/${t.demo.employees.eve}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: t.demo.employees.eve,
      companyId: t.demo.companies.acme,
      displayName: 'Eve Employee',
      email: 'eve@acme.example',
      personalEmail: null,
      country: 'US',
      teamName: 'Sales',
      jobTitle: 'Account Executive',
      addressOne: '1 Market St',
      addressTwo: null,
      city: 'San Francisco',
      state: 'CA',
      zipCode: '94105',
      phone: null,
      hasActiveLogin: true,
    });
    expect(res.body.data).not.toHaveProperty('teamId');
    expect((await admin.get(`/v4/employees/${t.demo.employees.noah}`)).body.data.hasActiveLogin).toBe(false);
    const missing = await admin.get('/v4/employees/emp_nope');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('scopes a manager to their teams and regions, in lists and reads alike', async () => {
    const list = await manager.get('/v4/employees');
    expect(list.status).toBe(200);
    expect(names(list.body.data.employees)).toEqual(['Dana Developer', 'Erik Engineer', 'Hans Berger']);
    expect(list.body.data.totalCount).toBe(3);
    for (const hidden of [t.demo.employees.eve, t.demo.employees.sofia, t.demo.employees.noah, t.demo.employees.greta]) {
      const res = await manager.get(`/v4/employees/${hidden}`);
      expect(res.status).toBe(404);
    }
    expect((await manager.get(`/v4/employees/${t.demo.employees.hans}`)).status).toBe(200);
    const otherCompany = await manager.get(`/v4/employees?companyId=${t.demo.companies.globex}`);
    expect(otherCompany.status).toBe(403);
  });

  it('lets an employee read only their own record', async () => {
    const eve = client(t.app, t.demo.apiKeys.employee);
    const list = await eve.get('/v4/employees');
    expect(list.body.data.employees.map((e: { id: string }) => e.id)).toEqual([t.demo.employees.eve]);
    expect((await eve.get(`/v4/employees/${t.demo.employees.eve}`)).status).toBe(200);
    expect((await eve.get(`/v4/employees/${t.demo.employees.erik}`)).status).toBe(404);
    expect((await eve.get('/v4/employees/countries')).body.data.countries).toEqual(['US']);
    const write = await eve.patch(`/v4/employees/${t.demo.employees.eve}`, { jobTitle: 'CEO' });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('missing_capability');
  });

  it('denies a key without the capability, reads and writes independently', async () => {
    const writeOnly = await keyWith(t, 'admin', ['mcp:employees:write']);
    for (const path of ['/v4/employees', `/v4/employees/${t.demo.employees.eve}`, '/v4/employees/countries']) {
      const res = await client(t.app, writeOnly).get(path);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:employees:read' } });
    }
    const readOnly = client(t.app, await keyWith(t, 'admin', ['mcp:employees:read']));
    const create = await readOnly.post('/v4/employees', { ...acme, displayName: 'X', email: 'x@acme.example' });
    expect(create.status).toBe(403);
    expect(create.body.error.details).toEqual({ required: 'mcp:employees:write' });
    expect((await readOnly.patch(`/v4/employees/${t.demo.employees.noah}`, { jobTitle: 'X' })).status).toBe(403);
  });

  it('creates an employee with the delivery address and a new team, which then exists', async () => {
    const res = await admin.post('/v4/employees', {
      ...acme,
      displayName: '  Lena Logistics ',
      email: 'lena@acme.example',
      personalEmail: 'lena@home.example',
      country: 'fr',
      jobTitle: 'Coordinator',
      department: 'Operations',
      division: 'EMEA',
      taxId: 'FR123',
      teamName: 'Logistics',
      addressOne: '10 Rue de Rivoli',
      city: 'Paris',
      zipCode: '75001',
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      displayName: 'Lena Logistics',
      country: 'FR',
      teamName: 'Logistics',
      personalEmail: 'lena@home.example',
      addressOne: '10 Rue de Rivoli',
      addressTwo: null,
      phone: null,
      hasActiveLogin: false,
      invitationQueued: false,
    });
    expect((await admin.get(`/v4/employees/${res.body.data.id}`)).body.data.city).toBe('Paris');
    const teams = await admin.get(`/v4/teams?companyId=${t.demo.companies.acme}&query=Logistics`);
    expect(teams.body.data.teams.map((x: { name: string }) => x.name)).toEqual(['Logistics']);
    // An existing team is reused whatever the case.
    const joined = await admin.post('/v4/employees', { ...acme, displayName: 'Leo', email: 'leo@acme.example', teamName: 'LOGISTICS' });
    expect(joined.body.data.teamName).toBe('Logistics');
  });

  it('names the field and the rule on bad input, including the legacy v2 names', async () => {
    const res = await admin.post('/v4/employees', { ...acme, displayName: '', email: 'not-an-email', secondaryEmail: 'a@b.example', teamId: 'team_x' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const byField = Object.fromEntries(res.body.error.details.map((d: { field: string; message: string }) => [d.field, d.message]));
    expect(Object.keys(byField).sort()).toEqual(['displayName', 'email', 'secondaryEmail', 'teamId']);
    expect(byField.secondaryEmail).toMatch(/personalEmail/);
    expect(byField.teamId).toMatch(/teamName/);
    const missing = await admin.post('/v4/employees', acme);
    expect(missing.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['displayName', 'email']);
  });

  it('refuses addressTwo and phone at creation, and accepts them with PATCH', async () => {
    const refused = await admin.post('/v4/employees', { ...acme, displayName: 'Ana', email: 'anna.b@acme.example', addressTwo: 'Apt 4', phone: '+1 555 0100' });
    expect(refused.status).toBe(400);
    const fields = refused.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['addressTwo', 'phone']);
    expect(refused.body.error.details[0].message).toContain('PATCH /v4/employees/{id}');
    expect((await admin.get('/v4/employees?query=anna.b@acme')).body.data.totalCount).toBe(0);

    const created = await admin.post('/v4/employees', { ...acme, displayName: 'Ana', email: 'anna.b@acme.example' });
    const patched = await admin.patch(`/v4/employees/${created.body.data.id}`, { addressTwo: 'Apt 4', phone: '+1 555 0100' });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ addressTwo: 'Apt 4', phone: '+1 555 0100', displayName: 'Ana' });
  });

  it('clears personalEmail with null and with an empty string', async () => {
    const created = await admin.post('/v4/employees', { ...acme, displayName: 'Pat', email: 'pat@acme.example', personalEmail: 'pat@home.example' });
    const id = created.body.data.id;
    expect(created.body.data.personalEmail).toBe('pat@home.example');
    expect((await admin.patch(`/v4/employees/${id}`, { personalEmail: null })).body.data.personalEmail).toBeNull();
    await admin.patch(`/v4/employees/${id}`, { personalEmail: 'pat@home.example' });
    expect((await admin.patch(`/v4/employees/${id}`, { personalEmail: '' })).body.data.personalEmail).toBeNull();
    const bad = await admin.patch(`/v4/employees/${id}`, { personalEmail: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toMatchObject({ field: 'personalEmail', rule: 'invalid_format' });
  });

  it('answers 409 on an email already used in the company (any case), not in another company', async () => {
    const dup = await admin.post('/v4/employees', { ...acme, displayName: 'Eve Two', email: 'EVE@acme.example' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('employee_email_taken');
    expect(dup.body.error.details[0]).toMatchObject({ field: 'email', rule: 'unique' });
    const elsewhere = await admin.post('/v4/employees', { companyId: t.demo.companies.globex, displayName: 'Eve G', email: 'eve@acme.example' });
    expect(elsewhere.status).toBe(201);
    const taken = await admin.patch(`/v4/employees/${t.demo.employees.noah}`, { email: 'erik@acme.example' });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('employee_email_taken');
  });

  it('requires an admin of several companies to name the company of a new employee', async () => {
    const res = await admin.post('/v4/employees', { displayName: 'Nobody', email: 'nobody@acme.example' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('company_required');
    expect(res.body.error.details[0].field).toBe('companyId');
  });

  it('updates fields of an employee and moves them between teams', async () => {
    const noah = `/v4/employees/${t.demo.employees.noah}`;
    const res = await admin.patch(noah, { jobTitle: ' Analyst ', teamName: 'Sales', email: 'noah.new@acme.example' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ jobTitle: 'Analyst', teamName: 'Sales', email: 'noah.new@acme.example' });
    expect(Date.parse(res.body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(res.body.data.createdAt));
    const removed = await admin.patch(noah, { teamName: null, jobTitle: null });
    expect(removed.body.data).toMatchObject({ teamName: null, jobTitle: null, email: 'noah.new@acme.example' });
    expect((await admin.patch('/v4/employees/emp_nope', { jobTitle: 'X' })).status).toBe(404);
  });

  it('rejects an empty PATCH body and unknown fields', async () => {
    const empty = await admin.patch(`/v4/employees/${t.demo.employees.noah}`, {});
    expect(empty.status).toBe(400);
    expect(empty.body.error.details[0]).toMatchObject({ field: '(body)', rule: 'min_properties' });
    const legacy = await admin.patch(`/v4/employees/${t.demo.employees.noah}`, { deliveryAddress: { city: 'X' } });
    expect(legacy.status).toBe(400);
    expect(legacy.body.error.details[0]).toMatchObject({ field: 'deliveryAddress', rule: 'unknown_field' });
  });

  it('refuses to change the email of an employee with an active login, other fields still change', async () => {
    const eve = `/v4/employees/${t.demo.employees.eve}`;
    const res = await admin.patch(eve, { email: 'eve.new@acme.example', jobTitle: 'Ignored' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('employee_has_active_login');
    expect(res.body.error.details[0].field).toBe('email');
    expect((await admin.get(eve)).body.data).toMatchObject({ email: 'eve@acme.example', jobTitle: 'Account Executive' });
    const sameEmail = await admin.patch(eve, { email: 'EVE@acme.example', jobTitle: 'Senior Account Executive' });
    expect(sameEmail.status).toBe(200);
    expect(sameEmail.body.data.jobTitle).toBe('Senior Account Executive');
  });

  it('lets a manager create and update only within their teams and regions', async () => {
    const inRegion = await manager.post('/v4/employees', { displayName: 'Dirk', email: 'dirk@acme.example', country: 'DE' });
    expect(inRegion.status).toBe(201);
    expect(inRegion.body.data.companyId).toBe(t.demo.companies.acme);
    const inTeam = await manager.post('/v4/employees', { displayName: 'Ines', email: 'ines@acme.example', country: 'IT', teamName: 'engineering' });
    expect(inTeam.status).toBe(201);
    expect(inTeam.body.data.teamName).toBe('Engineering');

    const outside = await manager.post('/v4/employees', { displayName: 'Uma', email: 'uma@acme.example', country: 'US' });
    expect(outside.status).toBe(403);
    expect(outside.body.error.code).toBe('out_of_scope');
    const otherTeam = await manager.post('/v4/employees', { displayName: 'Uma', email: 'uma@acme.example', country: 'DE', teamName: 'Sales' });
    expect(otherTeam.status).toBe(403);
    expect(otherTeam.body.error).toMatchObject({ code: 'team_not_in_scope' });
    const newTeam = await manager.post('/v4/employees', { displayName: 'Uma', email: 'uma@acme.example', country: 'DE', teamName: 'Skunkworks' });
    expect(newTeam.status).toBe(403);
    expect((await admin.get('/v4/employees?query=uma@acme')).body.data.totalCount).toBe(0);
    expect((await admin.get('/v4/teams?query=Skunkworks')).body.data.totalCount).toBe(0);

    // Moving Dirk out of the DE region would leave the manager's reach: refused, nothing written.
    const moveOut = await manager.patch(`/v4/employees/${inRegion.body.data.id}`, { country: 'US', jobTitle: 'Gone' });
    expect(moveOut.status).toBe(403);
    expect(moveOut.body.error.code).toBe('out_of_scope');
    expect((await manager.get(`/v4/employees/${inRegion.body.data.id}`)).body.data).toMatchObject({ country: 'DE', jobTitle: null });
    const hidden = await manager.patch(`/v4/employees/${t.demo.employees.sofia}`, { jobTitle: 'X' });
    expect(hidden.status).toBe(404);
    const ok = await manager.patch(`/v4/employees/${t.demo.employees.erik}`, { jobTitle: 'Staff Engineer' });
    expect(ok.status).toBe(200);
  });

  // Last: it disables Eve's login.
  it('lets the email change once the linked login is disabled', async () => {
    await setUserDisabled(t.core.db, t.demo.emails.employee, true);
    const eve = `/v4/employees/${t.demo.employees.eve}`;
    expect((await admin.get(eve)).body.data.hasActiveLogin).toBe(false);
    const res = await admin.patch(eve, { email: 'eve.renamed@acme.example' });
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe('eve.renamed@acme.example');
  });
});
