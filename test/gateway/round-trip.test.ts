import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultMappingsDir, loadMappings, type Transform } from '../../src/legacy/mappings.js';
import { Translation, type Doc } from '../../src/legacy/translate.js';

/*
 * v2 → v4 → v2 is the identity on the fields v2 has (and v4 → v2 → v4 on v4's), for the employee
 * translation of the shipped maps: secondaryEmail ↔ personalEmail, the deliveryAddress
 * sub-object ↔ flat fields, teamId ↔ teamName through a stub of the v4 team reads.
 * The seed is random unless FC_SEED is set; fast-check prints it with any counterexample.
 */

const SEED = process.env.FC_SEED === undefined ? Date.now() : Number(process.env.FC_SEED);
const RUNS = { seed: SEED, numRuns: 200 };

const mappings = loadMappings(defaultMappingsDir());
const route = mappings.routes.find((r) => r.method === 'PATCH' && r.path === '/employees/:id');
if (route?.kind !== 'v4') throw new Error('the maps lost PATCH /employees/:id');
const toV4: readonly Transform[] = route.request;
const toV2: readonly Transform[] = route.response;

const TEAMS = [
  { id: 'team_alpha', name: 'Alpha' },
  { id: 'team_beta', name: 'Beta' },
  { id: 'team_gamma', name: 'Gamma Ray' },
];

/** The two v4 team reads the lookups use, answering from TEAMS in pages of two. */
async function stubV4(operation: string, input: Doc): Promise<unknown> {
  if (operation === 'get_team') {
    const team = TEAMS.find((t) => t.id === input.id);
    if (!team) throw new Error(`no team ${String(input.id)}`);
    return { ...team, companyId: 'co_acme' };
  }
  if (operation === 'list_teams') {
    const start = Number(input.cursor ?? 0);
    const teams = TEAMS.slice(start, start + 2);
    const next = start + 2 < TEAMS.length ? String(start + 2) : null;
    return { teams, page: start / 2 + 1, pageSize: 2, totalCount: TEAMS.length, nextCursor: next };
  }
  throw new Error(`unexpected v4 call ${operation}`);
}

const translation = () => new Translation(stubV4, 10_000);
const source = { operation: 'get_employee', input: {} };

const text = fc.option(fc.string({ maxLength: 20 }), { nil: null });
const country = fc.constantFrom('DE', 'US', 'SE', 'ES');
const teamId = fc.option(fc.constantFrom(...TEAMS.map((t) => t.id)), { nil: null });
const email = fc.option(fc.emailAddress(), { nil: null });

/** A v2 employee write: any subset of the address, country always given (v2 required it). */
const v2Write = fc.record(
  {
    secondaryEmail: email,
    teamId,
    deliveryAddress: fc.record(
      { addressOne: text, addressTwo: text, city: text, state: text, zipCode: text, country, phone: text },
      { requiredKeys: ['country'] },
    ),
  },
  { requiredKeys: ['deliveryAddress'] },
);

/** A v4 employee as get_employee answers it: every address field present. */
const v4Employee = fc.record({
  id: fc.constant('emp_1'),
  displayName: fc.string({ minLength: 1, maxLength: 20 }),
  personalEmail: email,
  teamName: fc.option(fc.constantFrom(...TEAMS.map((t) => t.name)), { nil: null }),
  addressOne: text,
  addressTwo: text,
  city: text,
  state: text,
  zipCode: text,
  country,
  phone: text,
});

describe('v2 ↔ v4 employee translation round trips', () => {
  it(`v2 → v4 → v2 keeps every v2 field (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(v2Write, async (v2) => {
        const { input, followUps } = await translation().request(toV4, { id: 'emp_1', ...v2 });
        expect(followUps).toEqual([]);
        expect(input).not.toHaveProperty('secondaryEmail');
        expect(input).not.toHaveProperty('teamId');
        expect(input).not.toHaveProperty('deliveryAddress');
        const back = (await translation().response(toV2, input, source)) as Doc;
        for (const [field, value] of Object.entries(v2)) expect(back[field], field).toEqual(value);
      }),
      RUNS,
    );
  });

  it(`v4 → v2 → v4 keeps every v4 field (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(v4Employee, async (v4) => {
        const v2 = (await translation().response(toV2, v4, source)) as Doc;
        expect(v2).not.toHaveProperty('personalEmail');
        expect(v2).not.toHaveProperty('teamName');
        const { input } = await translation().request(toV4, v2);
        expect(input).toEqual(v4);
      }),
      RUNS,
    );
  });

  it('each rename and move is its own inverse on one field', async () => {
    await fc.assert(
      fc.asyncProperty(email, teamId, async (secondaryEmail, team) => {
        const { input } = await translation().request(toV4, { secondaryEmail, teamId: team });
        expect(input.personalEmail).toEqual(secondaryEmail);
        expect(input.teamName).toEqual(team === null ? null : TEAMS.find((t) => t.id === team)!.name);
      }),
      RUNS,
    );
  });
});
