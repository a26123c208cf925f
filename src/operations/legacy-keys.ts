import { z } from 'zod';
import { CapabilitySchema } from '../access/capabilities.js';
import { forbidden, notFound } from '../errors.js';
import { legacyKeyUsage, listLegacyKeys } from '../gateway/legacy-keys.js';
import { Id, Timestamp } from './common.js';
import { defineOperation } from './operation.js';

/*
 * The gateway's record of one legacy v2 key, for the migration audit (`svc migrate audit --key`).
 * Admin-only by role rather than by capability: it describes a company's integration, not its data.
 */

const LegacyKey = z.object({
  id: z.string(),
  companyId: z.string(),
  name: z.string(),
  keyHint: z.string().describe('The first characters of the key, never enough to use it'),
  scopes: z.array(z.string()).describe('The v2 scopes the key holds'),
  bridgeUserId: z.string(),
  bridgeKeyId: z.string().nullable(),
  capabilities: z.array(CapabilitySchema).describe('What the gateway’s bridge key may do in v4'),
  createdAt: Timestamp,
  disabledAt: Timestamp.nullable(),
  lastUsedAt: Timestamp.nullable(),
});

const Usage = z.object({
  day: z.string().describe('UTC day, YYYY-MM-DD'),
  endpoint: z.string().describe('The v2 endpoint called, "METHOD /path"'),
  scope: z.string().describe('The v2 scope the call used'),
  calls: z.number().int(),
});

const ADMIN_ONLY = 'Only an admin of the legacy key’s company may read it';

export const legacyKeyOperations = [
  defineOperation({
    name: 'list_legacy_keys',
    cli: 'legacy-keys list',
    title: 'List legacy v2 keys',
    description:
      'Lists the legacy v2 keys registered in the gateway for the companies the caller administers (admins only, else 403), oldest first: id, name, key hint, scopes and bridge capabilities. Read one with its usage through get_legacy_key. Never returns keys or hashes.',
    capability: null,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/legacy-keys',
    origin: 'extension',
    input: z.strictObject({}),
    output: z.object({ keys: z.array(LegacyKey) }),
    handler: async ({ core, principal }) => {
      if (principal.role !== 'admin') throw forbidden('admin_only', ADMIN_ONLY);
      return { keys: await listLegacyKeys(core, { companyIds: principal.companyIds }) };
    },
  }),
  defineOperation({
    name: 'get_legacy_key',
    cli: 'legacy-keys get',
    title: 'Read a legacy v2 key and its usage',
    description:
      'Reads one legacy v2 key registered in the gateway: its scopes and the v4 capabilities of its bridge, and its recorded usage (calls per UTC day and v2 endpoint, oldest first). Admins only (403 otherwise); a key of a company the caller does not administer is 404, as if absent. Never returns the key or its hash.',
    capability: null,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/legacy-keys/:id',
    origin: 'extension',
    input: z.strictObject({ id: Id.describe('Legacy key id (lk_…)') }),
    output: z.object({ key: LegacyKey, usage: z.array(Usage) }),
    handler: async ({ core, principal }, { id }) => {
      if (principal.role !== 'admin') throw forbidden('admin_only', ADMIN_ONLY);
      // Another company's key reads as absent, like every record beyond the caller's reach: a 403 would confirm it exists.
      const [key] = await listLegacyKeys(core, { companyIds: principal.companyIds, id });
      if (!key) throw notFound('Legacy key', id);
      return { key, usage: await legacyKeyUsage(core, id) };
    },
  }),
];
