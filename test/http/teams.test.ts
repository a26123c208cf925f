import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

describe.each(backends())('teams [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  it('lists teams across every company an admin administers, in stable pages', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const first = await api.get('/v4/teams?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.ok).toBe(true);
    expect(first.body.data).toMatchObject({ page: 1, pageSize: 2, totalCount: 5 });
    expect(first.body.data.teams).toHaveLength(2);
    const second = await api.get(`/v4/teams?limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.page).toBe(2);
    const byPage = await api.get('/v4/teams?limit=2&page=2');
    expect(byPage.body.data.teams).toEqual(second.body.data.teams);
    const names = [...first.body.data.teams, ...second.body.data.teams].map((x: { name: string }) => x.name);
    expect(new Set(names).size).toBe(4);
  });

  it('truncates limit above 50 instead of rejecting it', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).get('/v4/teams?limit=500');
    expect(res.status).toBe(200);
    expect(res.body.data.pageSize).toBe(50);
  });

  it('rejects a cursor issued for other filters', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const first = await api.get('/v4/teams?limit=1');
    const res = await api.get(`/v4/teams?limit=1&query=eng&cursor=${first.body.data.nextCursor}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_cursor');
  });

  it('reads one team with its employee count', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).get(`/v4/teams/${t.demo.teams.engineering}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Engineering', employeeCount: 2, companyId: t.demo.companies.acme });
  });

  it('scopes a manager to their own teams, in lists and reads alike', async () => {
    const api = client(t.app, t.demo.apiKeys.manager);
    const list = await api.get('/v4/teams');
    expect(list.body.data.teams.map((x: { name: string }) => x.name)).toEqual(['Engineering']);
    expect((await api.get(`/v4/teams/${t.demo.teams.sales}`)).status).toBe(404);
  });

  it('creates a team, and answers 409 on a duplicate name in the same company (any case)', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const created = await api.post('/v4/teams', { name: 'Design', companyId: t.demo.companies.acme });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'Design', companyId: t.demo.companies.acme });
    const dup = await api.post('/v4/teams', { name: 'design', companyId: t.demo.companies.acme });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('team_name_taken');
    const otherCompany = await api.post('/v4/teams', { name: 'Design', companyId: t.demo.companies.globex });
    expect(otherCompany.status).toBe(201);
  });

  it('requires an admin of several companies to name the company of a new team', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).post('/v4/teams', { name: 'Legal' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('company_required');
    expect(res.body.error.details[0].field).toBe('companyId');
  });

  it('renames a team, with 409 when the name is taken', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const renamed = await api.patch(`/v4/teams/${t.demo.teams.operations}`, { name: 'Ops' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe('Ops');
    const taken = await api.patch(`/v4/teams/${t.demo.teams.operations}`, { name: 'Sales' });
    expect(taken.status).toBe(409);
  });

  it('names the field and the rule on bad input', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).post('/v4/teams', { name: '', companyId: t.demo.companies.acme, colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['colour', 'name']);
    expect(res.body.meta.requestId).toBeTruthy();
  });

  it('denies a key without the capability, reads and writes independently', async () => {
    const writeOnly = await keyWith(t, 'admin', ['mcp:teams:write']);
    const read = await client(t.app, writeOnly).get('/v4/teams');
    expect(read.status).toBe(403);
    expect(read.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:teams:read' } });
    const readOnly = await keyWith(t, 'admin', ['mcp:teams:read']);
    const write = await client(t.app, readOnly).post('/v4/teams', { name: 'X', companyId: t.demo.companies.acme });
    expect(write.status).toBe(403);
  });
});
