import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';

const ADDRESS_FIELDS = ['address', 'alias', 'city', 'contactEmail', 'contactName', 'country', 'phone', 'zipCode'];

const warehouse = (overrides: Record<string, unknown> = {}) => ({
  alias: 'Hamburg Hub',
  address: 'Speicherstadt 5',
  city: 'Hamburg',
  zipCode: '20457',
  country: 'de',
  contactName: 'Hanna Hafen',
  contactEmail: 'hafen@acme.example',
  phone: '+49 (40) 555-0100',
  ...overrides,
});

const aliases = (body: { data: { addresses: Array<{ alias: string }> } }) => body.data.addresses.map((a) => a.alias).sort();

describe.each(backends())('company addresses [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  it('lists the addresses of every company an admin belongs to, and narrows by companyId', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const all = await api.get('/v4/company/addresses');
    expect(all.status).toBe(200);
    expect(all.body.data).toMatchObject({ page: 1, totalCount: 3, nextCursor: null });
    expect(aliases(all.body)).toEqual(['Berlin Warehouse', 'HQ San Francisco', 'Munich Office']);
    expect(all.body.data.addresses.find((a: { alias: string }) => a.alias === 'Munich Office')).toMatchObject({
      companyId: t.demo.companies.globex,
      address: 'Theresienstraße 1',
      city: 'München',
      zipCode: '80333',
      country: 'DE',
      contactName: 'Max Office',
      contactEmail: 'office@globex.example',
      phone: '+49 89 5550 200',
    });
    const globex = await api.get(`/v4/company/addresses?companyId=${t.demo.companies.globex}`);
    expect(aliases(globex.body)).toEqual(['Munich Office']);
  });

  it('filters by country and by a query on alias or city, treating % and _ literally', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    expect(aliases((await api.get('/v4/company/addresses?country=de')).body)).toEqual(['Berlin Warehouse', 'Munich Office']);
    expect(aliases((await api.get('/v4/company/addresses?query=warehouse')).body)).toEqual(['Berlin Warehouse']);
    expect(aliases((await api.get('/v4/company/addresses?query=san%20fran')).body)).toEqual(['HQ San Francisco']);
    expect((await api.get('/v4/company/addresses?query=%25')).body.data.totalCount).toBe(0);
  });

  it('pages through addresses with a cursor', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const first = await api.get('/v4/company/addresses?limit=2');
    expect(first.body.data.addresses).toHaveLength(2);
    const second = await api.get(`/v4/company/addresses?limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data).toMatchObject({ page: 2, nextCursor: null });
    expect(second.body.data.addresses).toHaveLength(1);
  });

  it('rejects a bad country filter and unknown query fields', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).get('/v4/company/addresses?country=Germany&colour=red');
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['colour', 'country']);
  });

  it('refuses a company the caller does not belong to', async () => {
    const res = await client(t.app, t.demo.apiKeys.manager).get(`/v4/company/addresses?companyId=${t.demo.companies.globex}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('company_not_accessible');
  });

  it('shows a manager only the addresses of their own company', async () => {
    const res = await client(t.app, t.demo.apiKeys.manager).get('/v4/company/addresses');
    expect(res.status).toBe(200);
    expect(aliases(res.body)).toEqual(['Berlin Warehouse', 'HQ San Francisco']);
    expect(res.body.data.addresses.every((a: { companyId: string }) => a.companyId === t.demo.companies.acme)).toBe(true);
  });

  it('creates an address (country upper-cased) and lists it afterwards', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const created = await api.post('/v4/company/addresses', warehouse({ companyId: t.demo.companies.acme }));
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ ...warehouse(), country: 'DE', companyId: t.demo.companies.acme });
    expect(created.body.data.id).toMatch(/^addr_/);
    expect(Date.parse(created.body.data.createdAt)).not.toBeNaN();
    const listed = await api.get('/v4/company/addresses?query=hamburg');
    expect(listed.body.data.addresses).toEqual([created.body.data]);
  });

  it('answers 409 address_alias_taken on a duplicate alias in the same company, in any case', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const dup = await api.post('/v4/company/addresses', warehouse({ alias: 'berlin WAREHOUSE', companyId: t.demo.companies.acme }));
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('address_alias_taken');
    expect(dup.body.error.details[0]).toMatchObject({ field: 'alias', rule: 'unique' });
    const otherCompany = await api.post('/v4/company/addresses', warehouse({ alias: 'Berlin Warehouse', companyId: t.demo.companies.globex }));
    expect(otherCompany.status).toBe(201);
  });

  it('names every missing field of an empty body', async () => {
    const res = await client(t.app, t.demo.apiKeys.admin).post('/v4/company/addresses', {});
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(ADDRESS_FIELDS);
  });

  it.each([
    ['contactEmail', { contactEmail: 'not-an-email' }],
    ['country', { country: 'DEU' }],
    ['phone', { phone: 'call me' }],
    ['phone', { phone: '12' }],
    // Long enough, but four digits: the digit count is a check of its own, still one problem for the field.
    ['phone', { phone: '+(12) 34-' }],
    ['alias', { alias: '   ' }],
    ['colour', { colour: 'red' }],
  ])('rejects a bad %s and names it', async (field, overrides) => {
    const res = await client(t.app, t.demo.apiKeys.admin).post(
      '/v4/company/addresses',
      warehouse({ alias: 'Rejected', companyId: t.demo.companies.acme, ...overrides }),
    );
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  it('requires an admin of several companies to name the company, and only one of theirs', async () => {
    const api = client(t.app, t.demo.apiKeys.admin);
    const unnamed = await api.post('/v4/company/addresses', warehouse({ alias: 'Nowhere' }));
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.error.code).toBe('company_required');
    expect(unnamed.body.error.details[0].field).toBe('companyId');
    const foreign = await api.post('/v4/company/addresses', warehouse({ alias: 'Nowhere', companyId: 'co_initech' }));
    expect(foreign.status).toBe(403);
  });

  it('lets a single-company caller omit companyId', async () => {
    // The demo admin spans two companies and a manager cannot hold company:write: use a one-company admin.
    await createUser(t.core.db, { email: 'site-admin@acme.example', displayName: 'Site Admin', role: 'admin', companyIds: [t.demo.companies.acme] });
    const single = await mintKeyForUser(t.core.db, 'site-admin@acme.example', ['mcp:company:write']);
    const res = await client(t.app, single.rawKey).post('/v4/company/addresses', warehouse({ alias: 'Leipzig Depot' }));
    expect(res.status).toBe(201);
    expect(res.body.data.companyId).toBe(t.demo.companies.acme);
  });

  it('denies keys without the capability, reads and writes independently', async () => {
    const writeOnly = await keyWith(t, 'admin', ['mcp:company:write']);
    const read = await client(t.app, writeOnly).get('/v4/company/addresses');
    expect(read.status).toBe(403);
    expect(read.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:company:read' } });
    const readOnly = await keyWith(t, 'admin', ['mcp:company:read']);
    const write = await client(t.app, readOnly).post('/v4/company/addresses', warehouse({ companyId: t.demo.companies.acme }));
    expect(write.status).toBe(403);
    expect(write.body.error.details.required).toBe('mcp:company:write');
    // An employee's role never reaches company addresses.
    expect((await client(t.app, t.demo.apiKeys.employee).get('/v4/company/addresses')).status).toBe(403);
    expect((await client(t.app, t.demo.apiKeys.manager).post('/v4/company/addresses', warehouse())).status).toBe(403);
  });
});
