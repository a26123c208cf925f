import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kit/errors.js';
import { defaultMappingsDir, loadMappings, type Transform } from '../../src/legacy/mappings.js';
import { applyLocal, splitFollowUp, Translation, type LocalTransform, type SharedLookup } from '../../src/legacy/translate.js';

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
  it('spreads the address fields of deliveryAddress onto the employee, leaving the v2 document as sent', async () => {
    const sent = { id: 'emp_1', deliveryAddress: { city: 'Potsdam', country: 'DE' } };
    const { input } = await translation().request(request, sent);
    expect(input).toStrictEqual({ id: 'emp_1', city: 'Potsdam', country: 'DE' });
    expect(sent).toStrictEqual({ id: 'emp_1', deliveryAddress: { city: 'Potsdam', country: 'DE' } });
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
    const before = structuredClone(v4);
    const v2 = (await teams.response(get.response, v4, { operation: get.operation, input: { id: 'emp_1' } })) as Record<string, unknown>;
    expect(Object.keys(v2)).toEqual(['id', 'companyId', 'displayName', 'email', 'country', 'jobTitle', 'hasActiveLogin', 'secondaryEmail', 'teamId', 'deliveryAddress']);
    expect(v2).toEqual({
      id: 'emp_1', companyId: 'co_1', displayName: 'Dana', email: 'dana@acme.example', country: 'DE', jobTitle: 'Engineer',
      hasActiveLogin: false, secondaryEmail: 'dana@home.example', teamId: 'team_1',
      deliveryAddress: { addressOne: 'Torstraße 1', addressTwo: null, city: 'Berlin', state: null, zipCode: '10119', country: 'DE', phone: null },
    });
    expect(Object.keys(v2.deliveryAddress as object)).toEqual(['addressOne', 'addressTwo', 'city', 'state', 'zipCode', 'country', 'phone']);
    // The transforms change the translation's copy: the v4 record itself is left as it was, its field order too.
    expect(v4).toStrictEqual(before);
    expect(Object.keys(v4)).toEqual(Object.keys(before));
  });
});

describe('lookups reused across requests', () => {
  const list = mappings.routes.find((r) => r.method === 'GET' && r.path === '/employees');
  if (list?.kind !== 'v4') throw new Error('the maps lost GET /employees');
  const page = {
    employees: [
      { id: 'emp_1', teamName: 'Engineering', city: 'Berlin' },
      { id: 'emp_2', teamName: null, city: 'Potsdam' },
      { id: 'emp_3', teamName: 'Sales', city: 'Hamburg' },
      { id: 'emp_4', teamName: 'Gone', city: 'Bonn' },
    ],
    totalCount: 4,
  };
  /** A shared cache as the gateway's: a held answer at once, a missing one loaded and kept. */
  const sharedCache = () => {
    const held = new Map<string, unknown>();
    const shared: SharedLookup = (_topic, key, load) =>
      held.has(key) ? held.get(key) : load().then((value) => (held.set(key, value), value));
    return shared;
  };
  const countingV4 = () => {
    const calls: string[] = [];
    const call = async (operation: string, input: Record<string, unknown>) => {
      calls.push(operation);
      if (operation === 'list_teams') return { teams: [{ id: 'team_1', name: 'Engineering' }, { id: 'team_2', name: 'Sales' }], totalCount: 2 };
      if (operation === 'get_team' && input.id === 'team_1') return { id: 'team_1', name: 'Engineering' };
      throw new AppError(404, 'not_found', `No team ${String(input.id)}`);
    };
    return { calls, call };
  };
  const expected = [
    { id: 'emp_1', teamId: 'team_1', deliveryAddress: { city: 'Berlin' } },
    { id: 'emp_2', teamId: null, deliveryAddress: { city: 'Potsdam' } },
    { id: 'emp_3', teamId: 'team_2', deliveryAddress: { city: 'Hamburg' } },
    { id: 'emp_4', teamId: null, deliveryAddress: { city: 'Bonn' } },
  ];

  it('loads a list lookup once for a whole page, and not at all while the shared cache holds it', async () => {
    const shared = sharedCache();
    const v4 = countingV4();
    const translate = () => new Translation(v4.call, 100, shared).response(list.response, page, { operation: list.operation, input: {} });
    expect(await translate()).toEqual(expected);
    expect(v4.calls).toEqual(['list_teams']);
    expect(await translate()).toEqual(expected);
    expect(v4.calls).toEqual(['list_teams']);
  });

  it('takes the first listed record of a name, as a search of the list in order does', async () => {
    const twice = async () => ({
      teams: [
        { id: 'team_1', name: 'Engineering' },
        { id: 'team_2', name: 'Engineering' },
        { id: 'team_3', name: 'Sales' },
      ],
      totalCount: 3,
    });
    const v2 = await new Translation(twice, 100).response(list.response, page, { operation: list.operation, input: {} });
    expect((v2 as Array<{ teamId: unknown }>).map((employee) => employee.teamId)).toEqual(['team_1', null, 'team_3', null]);
  });

  it('keeps a failed lookup a failure, with the v4 status, and caches nothing for it', async () => {
    const patch = mappings.routes.find((r) => r.method === 'PATCH' && r.path === '/employees/:id');
    if (patch?.kind !== 'v4') throw new Error('the maps lost PATCH /employees/:id');
    const shared = sharedCache();
    const v4 = countingV4();
    const request = (teamId: string) => new Translation(v4.call, 100, shared).request(patch.request, { id: 'emp_1', teamId });
    await expect(request('team_9')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(request('team_9')).rejects.toMatchObject({ status: 404 });
    expect((await request('team_1')).input).toEqual({ id: 'emp_1', teamName: 'Engineering' });
    expect((await request('team_1')).input).toEqual({ id: 'emp_1', teamName: 'Engineering' });
    expect(v4.calls).toEqual(['get_team', 'get_team', 'get_team']);
  });
});

describe('the document handed to v4', () => {
  it('takes no prototype from a __proto__ key a query string sent (?__proto__=a&__proto__=b)', async () => {
    const get = mappings.routes.find((r) => r.method === 'GET' && r.path === '/teams/:teamId');
    if (get?.kind !== 'v4') throw new Error('the maps lost GET /teams/:teamId');
    // An own __proto__ key, as the query parser makes it.
    const sent = JSON.parse('{"teamId":"team_1","__proto__":["a","b"]}') as Record<string, unknown>;
    const { input } = await translation().request(get.request, sent);
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
    expect(input).toStrictEqual({ id: 'team_1' });
  });

  it('starts afresh after a follow_up holds fields back, so a field added later goes last, as the guide shows', async () => {
    const transforms: Transform[] = [
      { op: 'rename', from: 'x', to: 'y' },
      { op: 'follow_up', operation: 'update_employee', fields: ['z'], id_from: 'id' },
      { op: 'rename', from: 'y', to: 'x' },
    ];
    const { input, followUps } = await translation().request(transforms, { x: 1, z: 2, w: 3 });
    expect(Object.keys(input)).toEqual(['w', 'x']);
    expect(input).toStrictEqual({ w: 3, x: 1 });
    expect(followUps).toStrictEqual([{ operation: 'update_employee', idFrom: 'id', fields: { z: 2 } }]);
    // The migration guide runs the same three steps with its own helpers.
    const [renamed, held, renamedBack] = transforms as [LocalTransform, Extract<Transform, { op: 'follow_up' }>, LocalTransform];
    const guide = applyLocal(renamedBack, splitFollowUp(applyLocal(renamed, { x: 1, z: 2, w: 3 }), held).rest);
    expect(guide).toStrictEqual(input);
    expect(Object.keys(guide)).toEqual(Object.keys(input));
  });

  it('puts a field removed and added again last, in the order the guide makes, follow_up or not', async () => {
    const there: LocalTransform = { op: 'rename', from: 'x', to: 'y' };
    const back: LocalTransform = { op: 'rename', from: 'y', to: 'x' };
    const { input } = await translation().request([there, back], { x: 1, w: 3 });
    expect(Object.keys(input)).toEqual(['w', 'x']);
    expect(Object.keys(applyLocal(back, applyLocal(there, { x: 1, w: 3 })))).toEqual(Object.keys(input));
  });
});
