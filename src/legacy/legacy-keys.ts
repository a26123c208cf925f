import { randomBytes } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { API_KEY_PREFIX, hashSecret, secretMatches } from '../access/api-keys.js';
import type { Capability } from '../access/capabilities.js';
import type { FirstUseRecorder } from '../access/first-use.js';
import type { DomainDeps } from '../domain/deps.js';
import { createUser, mintKeyForUser } from '../domain/admin.js';
import { encryptSecret, openSealed } from '../domain/pin-crypto.js';
import { pgErrorCode, UNIQUE_VIOLATION, type Queryable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { and, sql, type Sql } from '../store/sql.js';
import { AppError, badRequest, conflict, notFound, validationError } from '../kit/errors.js';
import { closest } from '../kit/did-you-mean.js';
import { capabilitiesForScopes, scopeEntryFor, type Mappings } from './mappings.js';
import { cutoverOf, usageWindowStart, type Cutover, type CutoverStage, type DisabledBy, type EnabledBy, type SuccessorFacts } from './cutover-stage.js';
import { leastCapabilities, ruleFor, type ScopeUsage } from './scope-rules.js';
import { recordCutoverEvent } from './cutover-events.js';
import type { UsageRecorder } from './legacy-key-usage.js';

/** What the legacy keys' services use: the domain's, the v2 maps, and the recorders of key usage. */
export interface LegacyDeps extends DomainDeps {
  mappings: Mappings;
  legacyUsage: Pick<UsageRecorder, 'record' | 'flush'>;
  keyFirstUse: Pick<FirstUseRecorder, 'record' | 'settled'>;
}

/**
 * What reading legacy keys uses: no mailer, no authenticator. A process that serves no v4 call (the
 * gateway apart) records no first use of a key, so has none to wait for.
 */
export type LegacyReadDeps = Pick<LegacyDeps, 'config' | 'db' | 'now' | 'mappings' | 'secretKey' | 'previousSecretKey' | 'legacyUsage'> & {
  keyFirstUse?: Pick<FirstUseRecorder, 'settled'>;
};

/*
 * Legacy v2 keys, registered in the gateway. Each is bound to a company and holds v2 scopes;
 * registering one provisions a non-personal bridge user and a v4 key with exactly the translated
 * capabilities (the spec's reissue steps), so every v2 call is checked by the core like a v4 call.
 */

/** Prefix of the keys we generate; imported keys keep whatever shape v2 gave them. */
export const LEGACY_KEY_PREFIX = 'lk_live_';

const RawLegacyKey = z
  .string()
  .regex(/^[\x21-\x7e]{8,200}$/, 'must be 8 to 200 printable ASCII characters without spaces')
  .refine((key) => !key.startsWith(API_KEY_PREFIX), {
    message: `a v4 key (${API_KEY_PREFIX}…) cannot be registered as a legacy key`,
    params: { rule: 'not_v4_key' },
  });

// 180 leaves room for the bridge user's "v2 bridge: " prefix within a display name's 200.
const KeyName = z.string().trim().min(1).max(180);
const V2Scopes = z.array(z.string().trim().min(1)).min(1, 'a legacy key holds at least one v2 scope');

export const NewLegacyKeySchema = z.strictObject({
  companyId: z.string().min(1),
  name: KeyName,
  scopes: V2Scopes,
  rawKey: RawLegacyKey.optional(),
});
export type NewLegacyKey = z.input<typeof NewLegacyKeySchema>;

export interface LegacyKeySummary {
  id: string;
  companyId: string;
  name: string;
  /** Enough of the key to recognise it, never enough to use it. */
  keyHint: string;
  scopes: string[];
  bridgeUserId: string;
  bridgeKeyId: string | null;
  /** What the bridge key may do in v4 (empty when no scope has a successor). */
  capabilities: Capability[];
  createdAt: string;
  disabledAt: string | null;
  lastUsedAt: string | null;
  /** Its stage on the way to its successor v4 key, with the dates. */
  cutover: Cutover;
}

export interface CreatedLegacyKey extends LegacyKeySummary {
  /** Only for generated keys, shown once; an imported key is already known to its owner. */
  rawKey?: string;
}

export function generateLegacyKey(): string {
  return `${LEGACY_KEY_PREFIX}${randomBytes(30).toString('base64url')}`;
}

/**
 * Enough to tell keys apart, never enough to guess one: at most an eighth of the key and 8
 * characters, so an imported key of 16 characters shows 2 and one under 8 shows none.
 */
export function keyHint(rawKey: string): string {
  return `${rawKey.slice(0, Math.min(8, Math.floor(rawKey.length / 8)))}…`;
}

/** Known scopes are those of the maps, with or without a v4 successor (wildcards such as api.organization.* included). */
function checkScopes(mappings: Mappings, scopes: readonly string[]): void {
  const names = mappings.scopes.map((entry) => entry.name);
  const details = scopes
    .filter((scope) => !scopeEntryFor(mappings.scopes, scope))
    .map((scope) => {
      const suggestion = closest(names, scope);
      return {
        field: 'scopes',
        rule: 'known_scope',
        message: `unknown v2 scope ${scope}${suggestion ? ` (did you mean ${suggestion}?)` : ''}`,
      };
    });
  if (details.length > 0) throw badRequest('unknown_scope', details.map((d) => d.message).join('; '), details);
}

function parseInput<T>(schema: z.ZodType<T>, input: unknown, where: string): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw validationError(parsed.error, where);
  return parsed.data;
}

/**
 * The email of a non-personal user dedicated to one legacy key (its v2 bridge, its v4 successor).
 * A domain must not contain `_`, which our ids do; the local part keeps the legacy key id intact.
 */
export function dedicatedUserEmail(role: 'v2-bridge' | 'v4-successor', legacyKeyId: string, companyId: string): string {
  return `${role}+${legacyKeyId}@${companyId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}.invalid`;
}

interface LegacyKeyRow {
  id: string;
  company_id: string;
  name: string;
  key_hint: string;
  scopes: string[];
  bridge_user_id: string;
  bridge_key_id: string | null;
  capabilities: Capability[];
  created_at: string;
  disabled_at: string | null;
  last_used_at: string | null;
  disabled_by: DisabledBy | null;
  disable_reason: string | null;
  enabled_at: string | null;
  enabled_by: EnabledBy | null;
  enable_reason: string | null;
  successor_key_id: string | null;
  successor_user_id: string | null;
  successor_capabilities: Capability[] | null;
  successor_minted_at: string | null;
  successor_first_used_at: string | null;
  successor_active: boolean | null;
}

const DAY_MS = 86_400_000;

/** Per key, the v2 scopes it called since the UTC day `since`, each with its last day. */
async function scopesCalled(db: Queryable, keyIds: string[], since: string): Promise<Map<string, ScopeUsage[]>> {
  const rows = await db.query<{ key_id: string; scope: string; last_day: string }>(sql`
    SELECT legacy_key_id AS key_id, scope, to_char(max(day), 'YYYY-MM-DD') AS last_day
    FROM legacy_key_usage WHERE legacy_key_id = ANY(${keyIds}::text[]) AND day >= ${since}::date
    GROUP BY legacy_key_id, scope`);
  const byKey = new Map<string, ScopeUsage[]>();
  for (const row of rows) byKey.set(row.key_id, [...(byKey.get(row.key_id) ?? []), { day: row.last_day, scope: row.scope, calls: 1 }]);
  return byKey;
}

/** Per successor key, the capabilities its successful v4 calls exercised, first use first. */
async function capabilitiesExercised(db: Queryable, keyIds: string[]): Promise<Map<string, SuccessorFacts['exercised']>> {
  const rows = keyIds.length === 0
    ? []
    : await db.query<{ key_id: string; capability: Capability; at: string }>(sql`
        SELECT key_id, capability, first_used_at AS at FROM api_key_capability_uses
        WHERE key_id = ANY(${keyIds}::text[]) ORDER BY first_used_at, capability`);
  const byKey = new Map<string, SuccessorFacts['exercised']>();
  for (const { key_id, capability, at } of rows) byKey.set(key_id, [...(byKey.get(key_id) ?? []), { capability, at }]);
  return byKey;
}

/** Reads keys with their cutover facts; the stage is derived at the core's clock. */
async function selectKeys(db: Queryable, core: Pick<LegacyReadDeps, 'now' | 'mappings'>, where: Sql): Promise<LegacyKeySummary[]> {
  const rows = await db.query<LegacyKeyRow>(sql`
    SELECT l.id, l.company_id, l.name, l.key_hint, l.scopes, l.bridge_user_id, l.bridge_key_id,
      COALESCE(k.capabilities, '{}'::text[]) AS capabilities, l.created_at, l.disabled_at, l.last_used_at,
      l.disabled_by, l.disable_reason, l.enabled_at, l.enabled_by, l.enable_reason, l.successor_key_id, s.user_id AS successor_user_id,
      s.capabilities AS successor_capabilities, l.successor_minted_at, s.first_used_at AS successor_first_used_at,
      (s.revoked_at IS NULL AND su.disabled_at IS NULL) AS successor_active
    FROM legacy_keys l LEFT JOIN api_keys k ON k.id = l.bridge_key_id
      LEFT JOIN api_keys s ON s.id = l.successor_key_id LEFT JOIN users su ON su.id = s.user_id
    WHERE ${where}
    ORDER BY l.created_at, l.id`);
  const now = core.now();
  const { quietDays, autoDisable } = core.mappings.sunset.cutover;
  const windowStart = usageWindowStart(now);
  // Far enough back for both the needed capabilities (the usage window) and the last call with a successor (the quiet period).
  const quietStart = new Date(now.getTime() - quietDays * DAY_MS).toISOString().slice(0, 10);
  const [called, exercised] = await Promise.all([
    scopesCalled(db, rows.map((row) => row.id), quietStart < windowStart ? quietStart : windowStart),
    capabilitiesExercised(db, rows.flatMap((row) => (row.successor_key_id ? [row.successor_key_id] : []))),
  ]);
  const rules = core.mappings.scopes;
  return rows.map((row) => ({
    id: row.id,
    companyId: row.company_id,
    name: row.name,
    keyHint: row.key_hint,
    scopes: row.scopes,
    bridgeUserId: row.bridge_user_id,
    bridgeKeyId: row.bridge_key_id,
    capabilities: row.capabilities,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    lastUsedAt: row.last_used_at,
    cutover: cutoverOf(
      {
        keyId: row.id,
        createdAt: row.created_at,
        lastUsedAt: row.last_used_at,
        lastMovableDay:
          (called.get(row.id) ?? [])
            .filter((usage) => ruleFor(rules, usage.scope)?.capability !== undefined)
            .map((usage) => usage.day)
            .sort()
            .at(-1) ?? null,
        needed: leastCapabilities(rules, row.scopes, { rows: called.get(row.id) ?? [], since: windowStart }),
        // The bridge holds exactly the capabilities of the key's scopes with a successor.
        hasV4Successor: row.bridge_key_id !== null,
        successor: row.successor_key_id
          ? {
              keyId: row.successor_key_id,
              userId: row.successor_user_id!,
              capabilities: row.successor_capabilities!,
              mintedAt: row.successor_minted_at!,
              firstUsedAt: row.successor_first_used_at,
              exercised: exercised.get(row.successor_key_id) ?? [],
              active: row.successor_active === true,
            }
          : null,
        disabled: row.disabled_at ? { at: row.disabled_at, by: row.disabled_by!, reason: row.disable_reason } : null,
        enabled: row.enabled_at ? { at: row.enabled_at, by: row.enabled_by!, reason: row.enable_reason } : null,
      },
      now,
      quietDays,
      autoDisable,
    ),
  }));
}

/** Which keys to list: all, those of some companies, or one by id (within those companies). */
export interface LegacyKeyFilter {
  companyIds?: readonly string[];
  id?: string;
}

/** Never returns hashes or keys: only what an operator needs to recognise and audit a key. Counts this instance's usage first. */
export async function listLegacyKeys(core: LegacyReadDeps, { companyIds, id }: LegacyKeyFilter = {}): Promise<LegacyKeySummary[]> {
  await Promise.all([core.legacyUsage.flush(), core.keyFirstUse?.settled()]);
  return selectKeys(
    core.db,
    core,
    and([
      ...(companyIds === undefined ? [] : [sql`l.company_id = ANY(${[...companyIds]}::text[])`]),
      ...(id === undefined ? [] : [sql`l.id = ${id}`]),
    ]),
  );
}

/** The reissue steps, inside the caller's transaction. */
async function register(
  tx: Queryable,
  core: LegacyDeps,
  mappings: Mappings,
  input: z.output<typeof NewLegacyKeySchema>,
): Promise<CreatedLegacyKey> {
  const scopes = [...new Set(input.scopes)];
  checkScopes(mappings, scopes);
  const [company] = await tx.query(sql`SELECT 1 FROM companies WHERE id = ${input.companyId}`);
  if (!company) throw notFound('Company', input.companyId);
  const rawKey = input.rawKey ?? generateLegacyKey();
  const keyHash = hashSecret(rawKey);
  const [existing] = await tx.query<{ id: string; name: string }>(sql`SELECT id, name FROM legacy_keys WHERE key_hash = ${keyHash}`);
  if (existing) throw duplicateKey(existing);

  const id = newId('lk');
  const email = dedicatedUserEmail('v2-bridge', id, input.companyId);
  const label = `v2 bridge: ${input.name}`;
  // Admin of this one company: scoping then reaches exactly what a company-bound v2 key reached.
  const bridgeUserId = await createUser(tx, {
    email,
    displayName: label,
    role: 'admin',
    companyIds: [input.companyId],
    nonPersonal: true,
  });
  const capabilities = capabilitiesForScopes(mappings, scopes);
  // Scopes without a v4 successor stay on v2: the key is still registered, with no bridge key.
  const bridge = capabilities.length > 0 ? await mintKeyForUser(tx, email, capabilities, label) : undefined;
  try {
    await tx.query(sql`
      INSERT INTO legacy_keys (id, company_id, name, key_hash, key_hint, scopes, bridge_user_id, bridge_key_id, bridge_key_ciphertext, created_at)
      VALUES (${id}, ${input.companyId}, ${input.name}, ${keyHash}, ${keyHint(rawKey)}, ${scopes}::text[], ${bridgeUserId},
        ${bridge?.keyId ?? null}, ${bridge ? encryptSecret(core.secretKey, bridge.rawKey, id) : null}, ${core.now().toISOString()})`);
  } catch (error) {
    // A concurrent registration of the same key got there first.
    if (pgErrorCode(error) === UNIQUE_VIOLATION) throw duplicateKey();
    throw error;
  }
  const [created] = await selectKeys(tx, core, sql`l.id = ${id}`);
  return { ...created!, ...(input.rawKey === undefined ? { rawKey } : {}) };
}

function duplicateKey(existing?: { id: string; name: string }): AppError {
  const which = existing ? ` as ${existing.id} ("${existing.name}")` : '';
  return conflict('legacy_key_exists', `This legacy key is already registered${which}`);
}

/** Registers one legacy key: with `rawKey` an existing v2 key is imported, without it one is generated. */
export async function createLegacyKey(core: LegacyDeps, mappings: Mappings, input: NewLegacyKey): Promise<CreatedLegacyKey> {
  const parsed = parseInput(NewLegacyKeySchema, input, 'legacy key');
  return core.db.transaction((tx) => register(tx, core, mappings, parsed));
}

/** The import file: existing v2 keys with their company and scopes. */
export const ImportFileSchema = z
  .array(
    z.strictObject({
      company: z.string().min(1),
      name: KeyName,
      key: RawLegacyKey,
      scopes: V2Scopes,
    }),
  )
  .min(1, 'the file lists no keys');

/** JSON is YAML, so one parser reads both formats. */
export function parseImportDocument(text: string): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    throw badRequest('invalid_import_file', `The import file is neither valid JSON nor YAML: ${(error as Error).message}`);
  }
}

/** All or nothing: one bad or duplicate entry rolls the whole import back, named by its position. */
export async function importLegacyKeys(
  core: LegacyDeps,
  mappings: Mappings,
  document: unknown,
): Promise<{ imported: number; keys: LegacyKeySummary[] }> {
  const entries = parseInput(ImportFileSchema, document, 'import file');
  const keys = await core.db.transaction(async (tx) => {
    const created: LegacyKeySummary[] = [];
    for (const [index, entry] of entries.entries()) {
      try {
        created.push(
          await register(tx, core, mappings, { companyId: entry.company, name: entry.name, scopes: entry.scopes, rawKey: entry.key }),
        );
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        throw new AppError(error.status, error.code, `Entry ${index + 1} ("${entry.name}"): ${error.message}`, error.details);
      }
    }
    return created;
  });
  return { imported: keys.length, keys };
}

/** The admin acting on a key: recorded by user id, named by email in the audit log line. */
export interface ActingAdmin {
  userId: string;
  email: string;
}

/** Who disables a key, and why; recorded with the date and shown with the key. */
export interface Disabling {
  by: DisabledBy;
  /** When an admin disables. */
  admin?: ActingAdmin | undefined;
  reason?: string | undefined;
  /** The stage of a key disabled before its cutover said it was safe (forced), for the audit log. */
  forcedAtStage?: CutoverStage | undefined;
}

const DISABLED_BY_TEXT: Record<DisabledBy, string> = { operator: 'the operator', admin: 'an admin', policy: 'the cutover policy' };

/**
 * Disables the key if it is active and `condition` (over `legacy_keys l`) still holds, in one
 * conditional UPDATE: of several instances deciding at once, exactly one disables it. Revokes what
 * it bridged to in the same transaction, then writes the audit log line. Returns the key, or
 * undefined when nothing was disabled.
 */
export async function disableIf(core: LegacyDeps, id: string, disabling: Disabling, condition: Sql = sql`TRUE`): Promise<LegacyKeySummary | undefined> {
  const disabled = await core.db.transaction(async (tx) => {
    const [row] = await tx.query<{ bridge_user_id: string; bridge_key_id: string | null }>(sql`
      UPDATE legacy_keys l SET disabled_at = ${core.now().toISOString()}, disabled_by = ${disabling.by},
        disabled_by_user_id = ${disabling.admin?.userId ?? null}, disable_reason = ${disabling.reason ?? null}
      WHERE l.id = ${id} AND l.disabled_at IS NULL AND ${condition}
      RETURNING l.bridge_user_id, l.bridge_key_id`);
    if (!row) return undefined;
    if (row.bridge_key_id) {
      await tx.query(sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${row.bridge_key_id} AND revoked_at IS NULL`);
    }
    // The bridge user exists only for this key; disabling it also stops any key minted for it by hand.
    await tx.query(sql`UPDATE users SET disabled_at = now() WHERE id = ${row.bridge_user_id} AND disabled_at IS NULL`);
    const [summary] = await selectKeys(tx, core, sql`l.id = ${id}`);
    await recordCutoverEvent(tx, {
      at: summary!.disabledAt!,
      action: 'disabled',
      legacyKeyId: id,
      by: disabling.by,
      admin: disabling.admin ?? null,
      reason: disabling.reason ?? null,
      forcedAtStage: disabling.forcedAtStage ?? null,
      successorKeyId: summary!.cutover.successor?.keyId ?? null,
    });
    return summary!;
  });
  if (disabled) {
    const { by, admin, reason, forcedAtStage } = disabling;
    core.logger.info(
      { legacyKeyId: id, companyId: disabled.companyId, by, admin, reason, forcedAtStage, successorKeyId: disabled.cutover.successor?.keyId },
      `legacy key disabled by ${DISABLED_BY_TEXT[by]}`,
    );
  }
  return disabled;
}

export const alreadyDisabled = (id: string) => conflict('legacy_key_disabled', `Legacy key ${id} is already disabled`);

/** Stops the legacy key and everything it bridged to, from the next request on, whatever its stage. */
export async function disableLegacyKey(core: LegacyDeps, id: string, disabling: Disabling = { by: 'operator' }): Promise<LegacyKeySummary> {
  const disabled = await disableIf(core, id, disabling);
  if (disabled) return disabled;
  const [row] = await core.db.query(sql`SELECT 1 FROM legacy_keys WHERE id = ${id}`);
  if (!row) throw notFound('Legacy key', id);
  throw alreadyDisabled(id);
}

/** Who undoes a disable, and why; recorded like a disable. */
export interface Enabling {
  by: EnabledBy;
  /** When an admin enables. */
  admin?: ActingAdmin | undefined;
  reason?: string | undefined;
}

/**
 * Undoes the disable of a key, until the sunset: v2 accepts it again from the next request, through
 * its bridge user enabled again and a new bridge key with the old one's capabilities (a revoked key
 * never comes back). The undone disable is logged; the key keeps the last undo.
 */
export async function enableLegacyKey(core: LegacyDeps, id: string, enabling: Enabling = { by: 'operator' }): Promise<LegacyKeySummary> {
  const { sunset } = core.mappings.sunset;
  if (core.now() >= sunset) {
    throw conflict('sunset_passed', `v2 reached its sunset on ${sunset.toISOString().slice(0, 10)}: legacy key ${id} stays disabled`);
  }
  const { summary, undone } = await core.db.transaction(async (tx) => {
    const [row] = await tx.query<{
      disabled_at: string | null;
      disabled_by: DisabledBy | null;
      disable_reason: string | null;
      bridge_user_id: string;
      bridge_email: string;
      bridge_key_name: string | null;
      bridge_capabilities: Capability[] | null;
    }>(sql`
      SELECT l.disabled_at, l.disabled_by, l.disable_reason, l.bridge_user_id, u.email AS bridge_email,
        k.name AS bridge_key_name, k.capabilities AS bridge_capabilities
      FROM legacy_keys l JOIN users u ON u.id = l.bridge_user_id LEFT JOIN api_keys k ON k.id = l.bridge_key_id
      WHERE l.id = ${id} FOR UPDATE OF l`);
    if (!row) throw notFound('Legacy key', id);
    if (!row.disabled_at) throw conflict('legacy_key_active', `Legacy key ${id} is not disabled`);
    await tx.query(sql`UPDATE users SET disabled_at = NULL WHERE id = ${row.bridge_user_id}`);
    // A key whose scopes all stay on v2 had no bridge key, and gets none.
    const bridge =
      row.bridge_key_name !== null && row.bridge_capabilities !== null
        ? await mintKeyForUser(tx, row.bridge_email, row.bridge_capabilities, row.bridge_key_name)
        : undefined;
    await tx.query(sql`
      UPDATE legacy_keys SET disabled_at = NULL, disabled_by = NULL, disabled_by_user_id = NULL, disable_reason = NULL,
        enabled_at = ${core.now().toISOString()}, enabled_by = ${enabling.by}, enabled_by_user_id = ${enabling.admin?.userId ?? null},
        enable_reason = ${enabling.reason ?? null}, bridge_key_id = ${bridge?.keyId ?? null},
        bridge_key_ciphertext = ${bridge ? encryptSecret(core.secretKey, bridge.rawKey, id) : null}
      WHERE id = ${id}`);
    const [summary] = await selectKeys(tx, core, sql`l.id = ${id}`);
    await recordCutoverEvent(tx, {
      at: summary!.cutover.enabled!.at,
      action: 'enabled',
      legacyKeyId: id,
      by: enabling.by,
      admin: enabling.admin ?? null,
      reason: enabling.reason ?? null,
      forcedAtStage: null,
      successorKeyId: null,
    });
    return { summary: summary!, undone: { at: row.disabled_at, by: row.disabled_by, reason: row.disable_reason } };
  });
  core.logger.info({ legacyKeyId: id, companyId: summary.companyId, by: enabling.by, admin: enabling.admin, reason: enabling.reason, undone }, 'legacy key enabled again');
  return summary;
}

export type LegacyKeyResolution =
  | {
      status: 'active';
      legacyKeyId: string;
      companyId: string;
      /** The integration's dedicated user, whom v4 sees calling with the bridge key. */
      bridgeUserId: string;
      scopes: string[];
      /** The v4 key the gateway sends upstream; null when no scope has a v4 successor. */
      bridgeApiKey: string | null;
    }
  | { status: 'disabled'; legacyKeyId: string }
  | { status: 'unknown' };

/** What the gateway does with an incoming v2 key. Read live, so disabling takes effect on the next request. */
export async function resolveLegacyKey(core: Pick<LegacyReadDeps, 'db' | 'secretKey' | 'previousSecretKey'>, rawKey: string): Promise<LegacyKeyResolution> {
  const [row] = await core.db.query<{
    id: string;
    company_id: string;
    bridge_user_id: string;
    scopes: string[];
    key_hash: string;
    bridge_key_ciphertext: string | null;
    disabled_at: string | null;
  }>(sql`SELECT id, company_id, bridge_user_id, scopes, key_hash, bridge_key_ciphertext, disabled_at
    FROM legacy_keys WHERE key_hash = ${hashSecret(rawKey)}`);
  if (!row || !secretMatches(rawKey, row.key_hash)) return { status: 'unknown' };
  if (row.disabled_at) return { status: 'disabled', legacyKeyId: row.id };
  return {
    status: 'active',
    legacyKeyId: row.id,
    companyId: row.company_id,
    bridgeUserId: row.bridge_user_id,
    scopes: row.scopes,
    bridgeApiKey: row.bridge_key_ciphertext === null ? null : openSealed(core, row.bridge_key_ciphertext, row.id),
  };
}

export interface LegacyKeyUsage {
  day: string;
  endpoint: string;
  scope: string;
  calls: number;
}

/** One key's usage, oldest day first: the input of the v2 usage audit. Counts this instance's usage first. */
export async function legacyKeyUsage(core: Pick<LegacyReadDeps, 'db' | 'legacyUsage'>, keyId: string): Promise<LegacyKeyUsage[]> {
  await core.legacyUsage.flush();
  return core.db.query<LegacyKeyUsage>(sql`
    SELECT to_char(day, 'YYYY-MM-DD') AS day, endpoint, scope, calls
    FROM legacy_key_usage WHERE legacy_key_id = ${keyId}
    ORDER BY day, endpoint`);
}
