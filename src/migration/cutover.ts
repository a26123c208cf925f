import type { FastifyInstance } from 'fastify';
import { Gauge } from 'prom-client';
import type { Capability } from '../access/capabilities.js';
import type { MigrationDeps } from './deps.js';
import { createUser, mintKeyForUser } from '../domain/admin.js';
import { conflict, forbidden, notFound, unprocessable } from '../kit/errors.js';
import { sql, type Sql } from '../store/sql.js';
import { recordCutoverEvent } from '../legacy/cutover-events.js';
import { CUTOVER_STAGES, USAGE_WINDOW_DAYS, usageWindowStart, type CutoverStage } from '../legacy/cutover-stage.js';
import {
  alreadyDisabled,
  dedicatedUserEmail,
  disableIf,
  disableLegacyKey,
  enableLegacyKey,
  legacyKeyUsage,
  listLegacyKeys,
  type ActingAdmin,
  type Disabling,
  type LegacyKeySummary,
  type LegacyReadDeps,
} from '../legacy/legacy-keys.js';
import { replacementOf } from '../legacy/reissue-steps.js';
import { leastCapabilities, type ScopeUsage } from '../legacy/scope-rules.js';

/*
 * The cutover of each legacy key to its successor v4 key (spec, reissue steps 5 and 6), from the
 * running service on either store: minting the successor for a dedicated non-personal user, the
 * keys-per-stage gauge, the guard that refuses to disable a key before its successor works and v2 is
 * quiet (unless forced, with a reason), and the optional policy that disables such keys itself
 * (mappings/sunset.yaml, cutover). Each mint, replace, disable and undo is stored as an audit event
 * (cutover-events.ts) in its own transaction and writes one log line naming the admin.
 */

const DAY_MS = 86_400_000;

/** The admin acting on a key of one of their companies. */
interface KeyAdmin extends ActingAdmin {
  companyIds: readonly string[];
}

/** Who mints: an admin, and the capabilities they may hand on. */
export interface Grantor extends KeyAdmin {
  capabilities: ReadonlySet<Capability>;
}

/** The operator at the host (svc-server): any key, any capability within the key's reach. */
export const OPERATOR = 'operator';

export interface SuccessorRequest {
  /** Default: those of the successor it replaces, else the least set for the scopes called in the usage window. */
  capabilities?: Capability[] | undefined;
  /** Revoke the key's working successor and mint another. */
  replace?: boolean | undefined;
}

export interface MintedSuccessor {
  key: LegacyKeySummary;
  successor: {
    keyId: string;
    /** Shown once: the service keeps only its hash. */
    apiKey: string;
    userId: string;
    userEmail: string;
    capabilities: Capability[];
    /** The successor it replaced (now revoked), if any. */
    replacedKeyId: string | null;
  };
}

/** A legacy key within the caller's companies; another company's reads as absent. */
export async function legacyKeyFor(core: LegacyReadDeps, companyIds: readonly string[], id: string): Promise<LegacyKeySummary> {
  const [key] = await listLegacyKeys(core, { companyIds, id });
  if (!key) throw notFound('Legacy key', id);
  return key;
}

/** Any legacy key, for the operator. */
async function operatorKey(core: MigrationDeps, id: string): Promise<LegacyKeySummary> {
  const [key] = await listLegacyKeys(core, { id });
  if (!key) throw notFound('Legacy key', id);
  return key;
}

/**
 * The legacy key whose dedicated successor user has this e-mail (dedicatedUserEmail), if any: what
 * `svc-server keys mint` mints for it is that key's successor.
 */
export async function legacyKeyOfSuccessorUser(core: MigrationDeps, email: string): Promise<LegacyKeySummary | undefined> {
  const id = /^v4-successor\+(lk_[0-9a-z]+)@/i.exec(email)?.[1];
  if (id === undefined) return undefined;
  const [key] = await listLegacyKeys(core, { id });
  return key && dedicatedUserEmail('v4-successor', key.id, key.companyId) === email.toLowerCase() ? key : undefined;
}

/**
 * What a successor key gets unless the admin chooses: the capabilities of the successor it replaces
 * with those the key's v2 calls need besides, else those of the scopes the key called in the usage
 * window (what the audit recommends); and what it may get at most, the v4 reach of the key's scopes.
 */
export function successorCapabilities(core: MigrationDeps, key: LegacyKeySummary, usage: readonly ScopeUsage[]): { suggested: Capability[]; allowed: Capability[] } {
  const previous = key.cutover.successor;
  const suggested = previous
    ? replacementOf(previous.capabilities, key.cutover.coverage.needed)
    : leastCapabilities(core.mappings.scopes, key.scopes, { rows: usage, since: usageWindowStart(core.now()) });
  return { suggested, allowed: key.capabilities };
}

async function chooseCapabilities(core: MigrationDeps, key: LegacyKeySummary, grantor: Grantor | typeof OPERATOR, requested: Capability[] | undefined): Promise<Capability[]> {
  const capabilities = [...new Set(requested ?? successorCapabilities(core, key, await legacyKeyUsage(core, key.id)).suggested)];
  if (capabilities.length === 0) {
    const message = `Legacy key ${key.id} made no v2 call with a v4 successor in the last ${USAGE_WINDOW_DAYS} days: name the capabilities to mint (within ${key.capabilities.join(', ')})`;
    throw unprocessable('capabilities_required', message, [{ field: 'capabilities', rule: 'required', message }]);
  }
  // A successor never reaches further in v4 than the legacy key's scopes do through the gateway.
  const beyond = capabilities.filter((c) => !key.capabilities.includes(c));
  if (beyond.length > 0) {
    const message = `${beyond.join(', ')} ${beyond.length > 1 ? 'are' : 'is'} beyond the v4 reach of legacy key ${key.id}'s scopes (${key.capabilities.join(', ')})`;
    throw unprocessable('capability_beyond_scopes', message, [{ field: 'capabilities', rule: 'within_scopes', message }]);
  }
  // Delegation never widens: a narrowed admin key cannot mint a broader one.
  const notHeld = grantor === OPERATOR ? [] : capabilities.filter((c) => !grantor.capabilities.has(c));
  if (notHeld.length > 0) {
    throw forbidden('capability_not_held', `Your credential lacks ${notHeld.join(', ')}, so it cannot hand ${notHeld.length > 1 ? 'them' : 'it'} on`, { missing: notHeld });
  }
  return capabilities;
}

/**
 * Mints the legacy key's successor v4 key as its dedicated non-personal user (created on first use)
 * and links the two. The user is an admin of the key's company, so its key reaches company-wide the
 * data its capabilities cover, as the v2 key did; being non-personal, it never administers keys or
 * the migration (requireHumanAdmin). Works while the service runs, on either store; the operator's
 * offline `svc-server legacy-keys mint-successor` (and `keys mint` for a successor user) take the same path.
 */
export async function mintSuccessorKey(core: MigrationDeps, id: string, grantor: Grantor | typeof OPERATOR, request: SuccessorRequest = {}): Promise<MintedSuccessor> {
  const readKey = () => (grantor === OPERATOR ? operatorKey(core, id) : legacyKeyFor(core, grantor.companyIds, id));
  const key = await readKey();
  const admin = grantor === OPERATOR ? null : { userId: grantor.userId, email: grantor.email };
  if (key.capabilities.length === 0) {
    throw conflict('no_v4_successor', `None of the scopes of legacy key ${id} has a v4 successor: it stays on v2 until the sunset`);
  }
  const previous = key.cutover.successor;
  const current = previous?.active ? previous : null;
  if (current && !request.replace) {
    throw conflict('successor_exists', `Legacy key ${id} already has the successor key ${current.maskedKey}; pass replace: true to revoke it and mint another`);
  }
  const capabilities = await chooseCapabilities(core, key, grantor, request.capabilities);
  const email = dedicatedUserEmail('v4-successor', id, key.companyId);
  const label = `${key.name} (v4)`;
  const minted = await core.db.transaction(async (tx) => {
    // Two admins minting at once: the second finds the link changed and stops.
    const [locked] = await tx.query<{ successor_key_id: string | null }>(sql`SELECT successor_key_id FROM legacy_keys WHERE id = ${id} FOR UPDATE`);
    if ((locked?.successor_key_id ?? null) !== (previous?.keyId ?? null)) {
      throw conflict('successor_changed', `The successor of legacy key ${id} changed meanwhile; read the key again`);
    }
    const [user] = await tx.query<{ disabled_at: string | null }>(sql`SELECT disabled_at FROM users WHERE lower(email) = lower(${email})`);
    if (user?.disabled_at) throw conflict('successor_user_disabled', `The successor user ${email} is disabled; enable it to mint its key`);
    if (!user) await createUser(tx, { email, displayName: label, role: 'admin', companyIds: [key.companyId], nonPersonal: true });
    if (current) await tx.query(sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${current.keyId} AND revoked_at IS NULL`);
    const minted = await mintKeyForUser(tx, email, capabilities, label);
    const at = core.now().toISOString();
    await tx.query(sql`UPDATE legacy_keys SET successor_key_id = ${minted.keyId}, successor_minted_at = ${at} WHERE id = ${id}`);
    await recordCutoverEvent(tx, {
      at,
      action: current ? 'successor_replaced' : 'successor_minted',
      legacyKeyId: id,
      by: admin ? 'admin' : 'operator',
      admin,
      reason: null,
      forcedAtStage: null,
      successorKeyId: minted.keyId,
    });
    return minted;
  });
  core.logger.info(
    {
      legacyKeyId: id,
      companyId: key.companyId,
      ...(admin ? { admin } : { by: OPERATOR }),
      successorKeyId: minted.keyId,
      replacedKeyId: current?.keyId,
      capabilities: minted.capabilities,
    },
    current ? 'successor key replaced' : 'successor key minted',
  );
  return {
    key: await readKey(),
    successor: {
      keyId: minted.keyId,
      apiKey: minted.rawKey,
      userId: minted.userId,
      userEmail: email,
      capabilities: minted.capabilities,
      replacedKeyId: current?.keyId ?? null,
    },
  };
}

/**
 * The facts of stage v2_quiet over `legacy_keys l`: no v2 call for quietDays (counted from the last
 * call, or the undo of an earlier disable: GREATEST skips a NULL) and a successor that is still
 * active and has been used. Checked again in the disabling UPDATE, so a v2 call recorded meanwhile
 * keeps the key. Its calls' coverage of the needed capabilities was checked on the stage read
 * before: only a v2 call (refused here as not quiet) or a revoked successor can undo it.
 */
function quietWithWorkingSuccessor(core: MigrationDeps): Sql {
  const quietBefore = new Date(core.now().getTime() - core.mappings.sunset.cutover.quietDays * DAY_MS).toISOString();
  return sql`GREATEST(COALESCE(l.last_used_at, l.created_at), l.enabled_at) <= ${quietBefore}
      AND EXISTS (SELECT 1 FROM api_keys s JOIN users su ON su.id = s.user_id
        WHERE s.id = l.successor_key_id AND s.first_used_at IS NOT NULL AND s.revoked_at IS NULL AND su.disabled_at IS NULL)`;
}

/** A duration in the unit that reads best: minutes, hours, then days. */
function elapsed(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} hours` : `${Math.floor(hours / 24)} days`;
}

/** What a key's cutover still lacks before a disable is safe (a working successor, v2 quiet); empty once v2_quiet. */
export function missingBeforeDisable(key: Pick<LegacyKeySummary, 'lastUsedAt' | 'cutover'>, now: Date): string[] {
  const { stage, successor, quietSince, quietFrom, quietDays, enabled } = key.cutover;
  if (stage === 'v2_quiet') return [];
  const missing: string[] = [];
  const { lacking, unexercised } = key.cutover.coverage;
  if (!successor) missing.push('it has no successor v4 key');
  else if (!successor.active) missing.push(`its successor key ${successor.maskedKey} no longer works (revoked, or its user disabled)`);
  else if (lacking.length > 0) missing.push(`its successor key ${successor.maskedKey} lacks ${lacking.join(', ')}, which its v2 calls need`);
  else if (unexercised.length > 0) missing.push(`its successor key ${successor.maskedKey} has made no successful v4 call needing ${unexercised.join(', ')} yet`);
  else if (!successor.firstUsedAt) missing.push(`its successor key ${successor.maskedKey} has made no successful v4 call yet`);
  if (stage === 'v2_unmovable_only') missing.push('its remaining v2 calls have no v4 successor, so disabling it stops them');
  if (quietFrom > now.toISOString()) {
    const ago = elapsed(now.getTime() - Date.parse(quietSince));
    const since = quietSince === key.lastUsedAt ? `v2 was called with it ${ago} ago` : quietSince === enabled?.at ? `its disable was undone ${ago} ago` : `it was registered ${ago} ago`;
    missing.push(`${since}, so it is quiet only on ${quietFrom.slice(0, 10)} (after ${quietDays} days without a v2 call)`);
  }
  return missing;
}

function legacyKeyInUse(key: LegacyKeySummary, now: Date) {
  const missing = missingBeforeDisable(key, now);
  const { stage, quietFrom } = key.cutover;
  return conflict(
    'legacy_key_in_use',
    `Legacy key ${key.id} ("${key.name}") is at stage ${stage}, not v2_quiet: ${missing.join('; ')}. Disabling it would cut off an integration that may still be live; to disable it anyway, force it with a reason (force: true and reason; svc: --force --reason)`,
    { stage, missing, quietFrom },
  );
}

/** How an admin or the operator asks for a disable. */
interface DisableRequest {
  /** Disable before the cutover says it is safe; the caller requires a reason with it. */
  force?: boolean | undefined;
  reason?: string | undefined;
}

/**
 * Disables a key only when its cutover says it is safe (its successor works and v2 is quiet, checked
 * again in the UPDATE itself), else 409 legacy_key_in_use naming the stage and what is missing; a
 * forced disable skips the check and logs the stage it cut off.
 */
export async function disableWhenSafe(core: MigrationDeps, key: LegacyKeySummary, disabling: Disabling, force = false): Promise<LegacyKeySummary> {
  if (key.disabledAt) throw alreadyDisabled(key.id);
  if (force) return disableLegacyKey(core, key.id, { ...disabling, forcedAtStage: key.cutover.stage });
  if (key.cutover.stage !== 'v2_quiet') throw legacyKeyInUse(key, core.now());
  const disabled = await disableIf(core, key.id, disabling, quietWithWorkingSuccessor(core));
  if (disabled) return disabled;
  // Between the read and the UPDATE, v2 was called, the successor revoked, or another admin disabled it.
  const [current] = await listLegacyKeys(core, { id: key.id });
  throw current?.disabledAt ? alreadyDisabled(key.id) : legacyKeyInUse(current ?? key, core.now());
}

/** An admin disables a key of one of their companies, when safe or forced, recorded with who and why. */
export async function adminDisableLegacyKey(core: MigrationDeps, id: string, admin: KeyAdmin, { force, reason }: DisableRequest = {}): Promise<LegacyKeySummary> {
  const key = await legacyKeyFor(core, admin.companyIds, id);
  const disabling = { by: 'admin' as const, admin: { userId: admin.userId, email: admin.email }, reason: reason ?? `disabled by ${admin.email}` };
  return disableWhenSafe(core, key, disabling, force);
}

/** An admin undoes the disable of a key of one of their companies (until the sunset), recorded like the disable. */
export async function adminEnableLegacyKey(core: MigrationDeps, id: string, admin: KeyAdmin, reason?: string): Promise<LegacyKeySummary> {
  await legacyKeyFor(core, admin.companyIds, id);
  return enableLegacyKey(core, id, { by: 'admin', admin: { userId: admin.userId, email: admin.email }, reason: reason ?? `enabled again by ${admin.email}` });
}

/**
 * One pass of the automatic policy: disables every key in stage v2_quiet. Each disable re-checks
 * the stage's facts in its conditional UPDATE, so instances running the pass together disable a
 * key once, and a v2 call recorded meanwhile keeps it. Returns the keys this pass disabled.
 */
export async function autoDisableQuietKeys(core: MigrationDeps): Promise<LegacyKeySummary[]> {
  const { quietDays, autoDisable } = core.mappings.sunset.cutover;
  if (!autoDisable) return [];
  const disabled: LegacyKeySummary[] = [];
  for (const key of await listLegacyKeys(core)) {
    const { stage, stages, successor, quietSince } = key.cutover;
    if (stage !== 'v2_quiet' || !successor) continue;
    const workingSince = stages.find((s) => s.stage === 'successor_working')!.at!;
    const reason = `successor key ${successor.maskedKey} working since ${workingSince.slice(0, 10)}; no v2 call since ${quietSince.slice(0, 10)} (quiet for ${quietDays} days)`;
    const done = await disableIf(core, key.id, { by: 'policy', reason }, quietWithWorkingSuccessor(core));
    if (done) disabled.push(done);
  }
  return disabled;
}

/** Runs the policy every checkEveryMinutes while the server serves (when it is on); returns the stop. */
function startAutoDisable(core: MigrationDeps): () => Promise<void> {
  const { autoDisable, checkEveryMinutes } = core.mappings.sunset.cutover;
  if (!autoDisable) return async () => {};
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    // A slow pass is never overlapped by the next.
    running ??= autoDisableQuietKeys(core)
      .catch((error: unknown) => core.logger.warn({ err: error }, 'cutover policy check failed; tried again at the next'))
      .finally(() => (running = undefined));
  }, checkEveryMinutes * 60_000).unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/**
 * Legacy keys per stage, all companies: one series per stage, whatever the number of keys. Every instance
 * counts the shared database at its scrape, so each reports the whole figure: it aggregates across
 * instances with `max by (stage)`, never `sum`. Counting on every instance, rather than on one
 * elected through a lock, keeps the figure while any instance is scraped, with no election to fail.
 */
function registerStageGauge(core: MigrationDeps): void {
  const name = 'svc_legacy_keys_by_stage';
  if (core.metrics.registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help: `Legacy v2 keys per cutover stage (${CUTOVER_STAGES.join(', ')}), all instances alike: aggregate with max by (stage), not sum`,
    labelNames: ['stage'] as const,
    registers: [core.metrics.registry],
    async collect() {
      try {
        const counts = new Map<CutoverStage, number>(CUTOVER_STAGES.map((stage) => [stage, 0]));
        for (const key of await listLegacyKeys(core)) counts.set(key.cutover.stage, counts.get(key.cutover.stage)! + 1);
        for (const [stage, count] of counts) this.set({ stage }, count);
      } catch (error) {
        // Absent rather than stale, so that max over the instances takes those that counted; the
        // scrape's other metrics still answer.
        this.reset();
        core.logger.warn({ err: error }, 'legacy keys per stage not counted');
      }
    },
  });
}

/** The cutover's part of the server: the gauge, and the policy from start to close. */
export function registerCutover(app: FastifyInstance, core: MigrationDeps): void {
  registerStageGauge(core);
  let stop: (() => Promise<void>) | undefined;
  app.addHook('onReady', async () => {
    stop = startAutoDisable(core);
  });
  app.addHook('onClose', async () => {
    await stop?.();
  });
}
