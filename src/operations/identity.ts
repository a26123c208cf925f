import { z } from 'zod';
import { defineOperation, onDemand } from './operation.js';
import { CapabilitySchema, ROLES } from '../access/capabilities.js';

const identity = onDemand(() => import('../domain/identity.js'));

const Named = z.object({ id: z.string(), name: z.string() });

export const identityOperations = [
  defineOperation({
    name: 'whoami',
    cli: 'whoami',
    title: 'Who am I',
    description: 'Your user, role, companies, manager scope and the capabilities this credential grants. Call it first to learn which tools you may use.',
    capability: null,
    readOnly: true,
    method: 'GET',
    path: '/v4/me',
    input: z.strictObject({}),
    output: z.object({
      user: z.object({
        id: z.string(),
        email: z.string(),
        displayName: z.string(),
        role: z.enum(ROLES),
        employeeId: z.string().nullable(),
        nonPersonal: z.boolean().describe('A dedicated user of one integration, not a person: it never administers keys or the migration'),
      }),
      companies: z.array(Named),
      scope: z.object({ teams: z.array(Named), regions: z.array(z.string()) }),
      capabilities: z.array(CapabilitySchema),
      credential: z.object({
        kind: z.enum(['api_key', 'id_token', 'oauth']),
        keyId: z.string().optional(),
        key: z.string().optional(),
        issuer: z.string().optional(),
        /** The OAuth client of a connection's token. */
        clientId: z.string().optional(),
      }),
    }),
    handler: async ({ core, principal }) => (await identity()).describePrincipal(core.db, principal),
  }),
];
