import { z } from 'zod';
import { CapabilitySchema } from '../../access/capabilities.js';
import { notFound } from '../../kit/errors.js';
import { CUTOVER_STAGES, DISABLED_BY, ENABLED_BY, USAGE_WINDOW_DAYS } from '../../legacy/cutover-stage.js';
import { Id, Text, Timestamp } from '../../operations/common.js';
import type { MigrationDeps } from '../deps.js';
import { columnsOf, defineOperation, onDemand, type Access, type OperationContext } from '../../operations/operation.js';

const migrationPlans = onDemand(() => import('../migration-plan.js'));
const legacyKeys = onDemand(() => import('../../legacy/legacy-keys.js'));
const cutover = onDemand(() => import('../cutover.js'));

/*
 * The gateway's record of one legacy v2 key, for the migration audit (`svc migrate audit --key`),
 * and its cutover to a successor v4 key: minting it from the running service, disabling the key and
 * undoing that. Human admins only, and through the company capabilities: a legacy key is the company's
 * integration configuration, like its addresses, so a key narrowed to other data (inventory, say)
 * cannot read or change it, and an integration's own non-personal user (its successor) cannot
 * administer it. Reads need mcp:company:read; minting, disabling and enabling mcp:company:write.
 */

/** Who reads a company's migration (here, on the dashboard, in the shadow report) and who changes it. */
export const MIGRATION_READ = { capability: 'mcp:company:read', humanAdminOnly: true } as const satisfies Access;
export const MIGRATION_WRITE = { capability: 'mcp:company:write', humanAdminOnly: true } as const satisfies Access;

const ADMINS_ONLY = 'Human admins only (403 admin_only; 403 non_personal_user for an integration’s non-personal user, such as a successor key’s)';

const Stage = z.enum(CUTOVER_STAGES);

const Cutover = z.object({
  stage: Stage.describe(
    'v2_only → successor_minted → successor_working (its successful v4 calls cover the capabilities the key’s v2 calls in the usage window need; a new kind of v2 call moves it back) → v2_unmovable_only (its only v2 calls in the quiet period have no v4 successor: they work until the sunset) → v2_quiet → v2_disabled',
  ),
  stages: z.array(z.object({ stage: Stage, at: Timestamp.nullable().describe('When the key reached it; null if not reached') })),
  successor: z
    .object({
      keyId: z.string(),
      maskedKey: z.string(),
      userId: z.string().describe('The dedicated non-personal user the successor key acts as'),
      capabilities: z.array(CapabilitySchema),
      mintedAt: Timestamp,
      firstUsedAt: Timestamp.nullable().describe('Its first successful v4 call'),
      exercised: z.array(z.object({ capability: CapabilitySchema, at: Timestamp })).describe('Each capability its successful v4 calls needed, with the first such call'),
      active: z.boolean().describe('False once revoked or its user disabled: the cutover starts over'),
    })
    .nullable(),
  coverage: z
    .object({
      needed: z.array(CapabilitySchema).describe('What the key’s v2 calls in the usage window need in v4'),
      lacking: z.array(CapabilitySchema).describe('Needed, not held by the active successor: replace it (mint-successor --replace)'),
      unexercised: z.array(CapabilitySchema).describe('Needed and held, but no successful v4 call of the successor has needed them yet'),
    })
    .describe('What the active successor’s calls still miss (lacking and unexercised are empty without one)'),
  quietDays: z.number().int().describe('No v2 call for this many days makes the key quiet (mappings/sunset.yaml)'),
  quietSince: Timestamp.describe('The last v2 call, the key’s creation or the undo of its disable, whichever is latest'),
  quietFrom: Timestamp.describe('When the key is (or, without another v2 call, will be) quiet'),
  disabled: z.object({ at: Timestamp, by: z.enum(DISABLED_BY), reason: z.string().nullable() }).nullable(),
  enabled: z
    .object({ at: Timestamp, by: z.enum(ENABLED_BY), reason: z.string().nullable() })
    .nullable()
    .describe('The last undo of a disable, if any: quiet counts again from it'),
  nextStep: z.string().nullable(),
});

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
  cutover: Cutover,
});

const Usage = z.object({
  day: z.string().describe('UTC day, YYYY-MM-DD'),
  endpoint: z.string().describe('The v2 endpoint called, "METHOD /path"'),
  scope: z.string().describe('The v2 scope the call used'),
  calls: z.number().int(),
});

const Call = z.object({ operation: z.string(), method: z.string(), path: z.string(), title: z.string(), capability: CapabilitySchema.nullable() });

const CalledEndpoint = {
  endpoint: z.string().describe('The v2 endpoint as served, "METHOD /v2/path"'),
  scope: z.string(),
  calls: z.number().int().describe('Calls in the usage window'),
  lastDay: z.string().describe('The last UTC day it was called'),
  guide: z.string().describe('Its section of the migration guide page'),
};

const PlanEndpoint = z.object({
  ...CalledEndpoint,
  successor: z.array(Call).describe('The v4 call(s) replacing it, in order'),
  capabilities: z.array(CapabilitySchema),
  lookupCapabilities: z.array(CapabilitySchema),
  changes: z.array(z.object({ direction: z.enum(['request', 'response']), kind: z.string(), text: z.string() })).describe('Field changes, from the migration guide'),
  example: z.unknown().describe('The guide’s example pair: the v2 curl line and the v4 ones replacing it'),
});

const BrownoutWindow = z.object({ start: Timestamp, end: Timestamp });
const SunsetStatusSchema = z.object({
  at: Timestamp,
  daysLeft: z.number().int(),
  brownouts: z
    .object({
      active: BrownoutWindow.nullable().describe('The window v2 is in now: every v2 call answers 410 Gone until its end'),
      next: BrownoutWindow.nullable().describe('The next window to start'),
      scheduled: z.array(BrownoutWindow).describe('Every window not yet ended, earliest first'),
    })
    .describe('Scheduled 410 Gone windows before the sunset (mappings/sunset.yaml)'),
});

const MigrationPlan = z.object({
  generatedAt: Timestamp,
  key: z.object({ id: z.string(), name: z.string(), companyId: z.string(), scopes: z.array(z.string()), lastUsedAt: Timestamp.nullable(), disabledAt: Timestamp.nullable() }),
  window: z.object({ days: z.number().int(), since: z.string().describe('The first UTC day counted') }),
  sunset: SunsetStatusSchema,
  totals: z.object({ calls: z.number().int(), movable: z.number().int(), staying: z.number().int() }),
  endpoints: z.array(PlanEndpoint).describe('The endpoints called that have a v4 successor, most called first'),
  staysOnV2: z.array(z.object({ ...CalledEndpoint, reason: z.string(), instead: z.string().optional() })).describe('The endpoints called without a v4 successor, with why'),
  capabilities: z.object({
    minimal: z.array(CapabilitySchema).describe('The least set for what the key called: the successor’s default'),
    forLookups: z.array(CapabilitySchema).describe('Needed besides where v4 looks up a value v2 took (a team name for its id)'),
    allowed: z.array(CapabilitySchema).describe('At most: the v4 reach of the key’s scopes'),
  }),
  successorUser: z.string().describe('The non-personal user the successor key acts as'),
  steps: z.array(
    z.object({
      id: z.enum(['read_guide', 'mint_successor', 'first_v4_call', 'move_calls', 'v2_quiet', 'disable_v2_key']),
      text: z.string(),
      command: z.string().nullable(),
      done: z.boolean(),
    }),
  ),
  cutover: Cutover,
});

/** The disable's input, also what the dashboard's form and `svc-server legacy-keys disable` are checked against. */
export const DisableLegacyKeyInput = z
  .strictObject({
    id: Id.describe('Legacy key id (lk_…)'),
    force: z
      .boolean()
      .optional()
      .describe('Disable although the key is not v2_quiet (its successor not working, or v2 called lately): cuts off a possibly live integration; needs a reason'),
    reason: Text(200, 'Why, as the dashboard shows it (default: "disabled by <your email>"); required with force').optional(),
  })
  .refine((input) => !input.force || input.reason !== undefined, {
    message: 'required when force is true: say why the key is disabled before its cutover is done',
    path: ['reason'],
    params: { rule: 'required_with_force' },
  });

/** The successor mint's input, also what `svc-server legacy-keys mint-successor` is checked against. */
export const MintSuccessorInput = z.strictObject({
  id: Id.describe('Legacy key id (lk_…)'),
  capabilities: z.array(CapabilitySchema).min(1).optional().describe('The successor’s capabilities (default: the least set, see above)'),
  replace: z.boolean().optional().describe('Revoke the working successor and mint another'),
});

export const legacyKeyOperations = [
  defineOperation({
    name: 'list_legacy_keys',
    cli: 'legacy-keys list',
    title: 'List legacy v2 keys',
    description:
      `Lists the legacy v2 keys registered in the gateway for the companies the caller administers, oldest first: id, name, key hint, scopes and bridge capabilities. Read one with its usage through get_legacy_key. Never returns keys or hashes. ${ADMINS_ONLY}.`,
    ...MIGRATION_READ,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/legacy-keys',
    origin: 'extension',
    input: z.strictObject({}),
    output: z.object({ keys: z.array(LegacyKey) }),
    // What an admin reviewing a migration asks first: which key, where its cutover stands, whether it is still used.
    columns: { keys: columnsOf(LegacyKey, ['id', 'name', 'cutover.stage', 'lastUsedAt', 'scopes', 'disabledAt', 'keyHint', 'capabilities', 'createdAt']) },
    handler: async ({ core, principal }: OperationContext<MigrationDeps>) => ({ keys: await (await legacyKeys()).listLegacyKeys(core, { companyIds: principal.companyIds }) }),
  }),
  defineOperation({
    name: 'get_legacy_key',
    cli: 'legacy-keys get',
    title: 'Read a legacy v2 key and its usage',
    description:
      `Reads one legacy v2 key registered in the gateway: its scopes and the v4 capabilities of its bridge, and its recorded usage (calls per UTC day and v2 endpoint, oldest first). ${ADMINS_ONLY}; a key of a company the caller does not administer is 404, as if absent. Never returns the key or its hash.`,
    ...MIGRATION_READ,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/legacy-keys/:id',
    origin: 'extension',
    input: z.strictObject({ id: Id.describe('Legacy key id (lk_…)') }),
    output: z.object({ key: LegacyKey, usage: z.array(Usage) }),
    columns: { usage: columnsOf(Usage, ['day', 'calls', 'endpoint', 'scope']) },
    handler: async ({ core, principal }: OperationContext<MigrationDeps>, { id }) => {
      // Another company's key reads as absent, like every record beyond the caller's reach: a 403 would confirm it exists.
      const [key] = await (await legacyKeys()).listLegacyKeys(core, { companyIds: principal.companyIds, id });
      if (!key) throw notFound('Legacy key', id);
      return { key, usage: await (await legacyKeys()).legacyKeyUsage(core, id) };
    },
  }),
  defineOperation({
    name: 'get_legacy_key_plan',
    cli: 'legacy-keys plan',
    title: 'The migration plan of a legacy v2 key',
    description: `The migration plan of one integration, from what its legacy v2 key called in the last ${USAGE_WINDOW_DAYS} days: each v2 endpoint it called with its v4 replacement call(s) and field changes (from the migration guide), most called first; the endpoints without a v4 successor, with the reason; the least capabilities of its successor key; the steps with the exact commands (mint the successor, first v4 call, quiet, disable), each marked done from the key's cutover stage, whose dates it includes. ${ADMINS_ONLY}; another company's key is 404. Also as \`svc migrate plan --key <id>\` and the page /app/migration/keys/<id>/plan.`,
    ...MIGRATION_READ,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/legacy-keys/:id/plan',
    origin: 'extension',
    input: z.strictObject({ id: Id.describe('Legacy key id (lk_…)') }),
    output: MigrationPlan,
    handler: async ({ core, principal }: OperationContext<MigrationDeps>, { id }) => (await migrationPlans()).buildMigrationPlan(core, principal.companyIds, id),
  }),
  defineOperation({
    name: 'mint_legacy_key_successor',
    cli: 'legacy-keys mint-successor',
    title: 'Mint the successor v4 key of a legacy v2 key',
    description: `Mints the v4 key that replaces a legacy v2 key (the spec's reissue steps 1 and 2) while the service runs: as a dedicated non-personal user of the key's company (created on first use), with the least capabilities, linked to the legacy key, whose stage becomes successor_minted. Capabilities default to those of the successor it replaces, else those of the v2 scopes the key called in the last ${USAGE_WINDOW_DAYS} days; named ones must lie within the v4 reach of the key's scopes and be held by the caller. A key with a working successor answers 409 successor_exists unless replace is true (the old successor is then revoked). ${ADMINS_ONLY}; another company's key is 404. The new key is in successor.apiKey, shown only this once.`,
    ...MIGRATION_WRITE,
    readOnly: false,
    method: 'POST',
    path: '/v4/admin/legacy-keys/:id/successor',
    origin: 'extension',
    successStatus: 201,
    input: MintSuccessorInput,
    output: z.object({
      key: LegacyKey,
      successor: z.object({
        keyId: z.string(),
        apiKey: z.string().describe('The new v4 key (svc_sk_…), shown only once: send it in X-API-KEY'),
        userId: z.string(),
        userEmail: z.string(),
        capabilities: z.array(CapabilitySchema),
        replacedKeyId: z.string().nullable().describe('The successor it replaced, now revoked'),
      }),
    }),
    handler: async ({ core, principal }: OperationContext<MigrationDeps>, { id, capabilities, replace }) =>
      (await cutover()).mintSuccessorKey(core, id, principal, { capabilities, replace }),
  }),
  defineOperation({
    name: 'disable_legacy_key',
    cli: 'legacy-keys disable',
    title: 'Disable a legacy v2 key',
    description: `Disables a legacy v2 key (the spec's reissue step 6, once its v4 successor works): from the next request on, v2 refuses it with 401 legacy_key_disabled, and the gateway's bridge key and user are revoked. Only a key in stage v2_quiet (its successor works and v2 has been quiet) is disabled; any other answers 409 legacy_key_in_use naming its stage and what is missing, unless force is true, which needs a reason (400 validation_failed without one). Recorded with the date, the admin and the reason, and logged; the stage becomes v2_disabled. Until the sunset, enable_legacy_key undoes it. ${ADMINS_ONLY}; another company's key is 404; a disabled key answers 409 legacy_key_disabled.`,
    ...MIGRATION_WRITE,
    readOnly: false,
    destructive: true,
    method: 'POST',
    path: '/v4/admin/legacy-keys/:id/disable',
    origin: 'extension',
    input: DisableLegacyKeyInput,
    output: z.object({ key: LegacyKey }),
    // svc shows the key's name and stage when it asks for confirmation.
    confirmWith: {
      path: '/v4/admin/legacy-keys/:id',
      describe: (data: unknown) => {
        const { key } = data as { key: z.infer<typeof LegacyKey> };
        return `Legacy key "${key.name}" (${key.id}) is at stage ${key.cutover.stage}${key.cutover.nextStep ? `: ${key.cutover.nextStep}` : ''}`;
      },
    },
    handler: async ({ core, principal }: OperationContext<MigrationDeps>, { id, force, reason }) => ({
      key: await (await cutover()).adminDisableLegacyKey(core, id, principal, { force, reason }),
    }),
  }),
  defineOperation({
    name: 'enable_legacy_key',
    cli: 'legacy-keys enable',
    title: 'Enable a disabled legacy v2 key again',
    description: `Undoes the disable of a legacy v2 key, until the sunset: from the next request on, v2 accepts the key again through a new bridge key. Recorded with the date, the admin and the reason; the key's stage is derived afresh, and its quiet period counts again from now (so the automatic policy does not disable it at once). ${ADMINS_ONLY}; another company's key is 404; an active key answers 409 legacy_key_active; after the sunset, 409 sunset_passed.`,
    ...MIGRATION_WRITE,
    readOnly: false,
    method: 'POST',
    path: '/v4/admin/legacy-keys/:id/enable',
    origin: 'extension',
    input: z.strictObject({
      id: Id.describe('Legacy key id (lk_…)'),
      reason: Text(200, 'Why, as the dashboard shows it (default: "enabled again by <your email>")').optional(),
    }),
    output: z.object({ key: LegacyKey }),
    handler: async ({ core, principal }: OperationContext<MigrationDeps>, { id, reason }) => ({
      key: await (await cutover()).adminEnableLegacyKey(core, id, principal, reason),
    }),
  }),
];
