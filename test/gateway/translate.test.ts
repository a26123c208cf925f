import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { defaultMappingsDir, loadMappings } from '../../src/gateway/mappings.js';
import { Translation } from '../../src/gateway/translate.js';

const mappings = loadMappings(defaultMappingsDir());
const route = mappings.routes.find((r) => r.method === 'PATCH' && r.path === '/employees/:id');
if (route?.kind !== 'v4') throw new Error('the maps lost PATCH /employees/:id');
const { request } = route;

/** No v4 call is expected: the documents below hold no teamId to look up. */
const translation = () =>
  new Translation(async (operation) => {
    throw new Error(`unexpected v4 call ${operation}`);
  }, 100);

describe('move_out_of spreads only the fields the maps list', () => {
  it('spreads the address fields of deliveryAddress onto the employee', async () => {
    const { input } = await translation().request(request, { id: 'emp_1', deliveryAddress: { city: 'Potsdam', country: 'DE' } });
    expect(input).toEqual({ id: 'emp_1', city: 'Potsdam', country: 'DE' });
  });

  it.each(['email', 'displayName', 'id'])('refuses deliveryAddress.%s, which would change the employee itself', async (field) => {
    const failure = translation().request(request, { id: 'emp_1', deliveryAddress: { country: 'DE', [field]: 'x' } });
    await expect(failure).rejects.toBeInstanceOf(AppError);
    await expect(failure).rejects.toMatchObject({
      status: 400,
      details: [{ field: `deliveryAddress.${field}`, rule: 'unknown_field', message: expect.stringContaining('addressOne, addressTwo, city') }],
    });
  });
});

describe('the employee answer keeps the v2 field order', () => {
  const get = mappings.routes.find((r) => r.method === 'GET' && r.path === '/employees/:id');
  if (get?.kind !== 'v4') throw new Error('the maps lost GET /employees/:id');

  it('renames and moves fields, appending each new one, as v2 clients have always read them', async () => {
    const teams = new Translation(async (operation) => {
      if (operation !== 'list_teams') throw new Error(`unexpected v4 call ${operation}`);
      return { teams: [{ id: 'team_1', name: 'Engineering' }], totalCount: 1 };
    }, 100);
    const v4 = {
      id: 'emp_1', companyId: 'co_1', displayName: 'Dana', email: 'dana@acme.example', personalEmail: 'dana@home.example',
      country: 'DE', jobTitle: 'Engineer', addressOne: 'Torstraße 1', addressTwo: null, city: 'Berlin', state: null,
      zipCode: '10119', phone: null, teamName: 'Engineering', hasActiveLogin: false,
    };
    const v2 = (await teams.response(get.response, v4, { operation: get.operation, input: { id: 'emp_1' } })) as Record<string, unknown>;
    expect(Object.keys(v2)).toEqual(['id', 'companyId', 'displayName', 'email', 'country', 'jobTitle', 'hasActiveLogin', 'secondaryEmail', 'teamId', 'deliveryAddress']);
    expect(v2).toEqual({
      id: 'emp_1', companyId: 'co_1', displayName: 'Dana', email: 'dana@acme.example', country: 'DE', jobTitle: 'Engineer',
      hasActiveLogin: false, secondaryEmail: 'dana@home.example', teamId: 'team_1',
      deliveryAddress: { addressOne: 'Torstraße 1', addressTwo: null, city: 'Berlin', state: null, zipCode: '10119', country: 'DE', phone: null },
    });
    expect(Object.keys(v2.deliveryAddress as object)).toEqual(['addressOne', 'addressTwo', 'city', 'state', 'zipCode', 'country', 'phone']);
    // The v4 record itself is left as it was.
    expect(v4).toHaveProperty('personalEmail', 'dana@home.example');
  });
});
