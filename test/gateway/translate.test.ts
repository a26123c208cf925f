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
