import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import type { CutoverStage, DisabledBy } from './cutover-stage.js';

/*
 * The cutover's audit trail as the dashboard lists it: every mint, replace, disable and undo of a
 * legacy key, with who, why and when. Written in the transaction of the change itself, so an event is
 * stored exactly when its change is committed; the log line of the same change follows the commit.
 */

export const CUTOVER_ACTIONS = ['successor_minted', 'successor_replaced', 'disabled', 'enabled'] as const;
export type CutoverAction = (typeof CUTOVER_ACTIONS)[number];

/** The events the dashboard and migration.json show, newest first. */
export const RECENT_CUTOVER_EVENTS = 20;

export interface CutoverEvent {
  at: string;
  action: CutoverAction;
  legacyKeyId: string;
  legacyKeyName: string;
  companyId: string;
  /** The operator's CLI, an admin (API or dashboard) or the automatic policy. */
  by: DisabledBy;
  /** The admin, when an admin acted: their id and their e-mail at the time. */
  admin: { userId: string; email: string } | null;
  reason: string | null;
  /** The stage a forced disable cut off. */
  forcedAtStage: CutoverStage | null;
  /** The successor key minted (or, for a disable, the key's successor at the time). */
  successorKeyId: string | null;
}

export type NewCutoverEvent = Omit<CutoverEvent, 'legacyKeyName' | 'companyId'>;

/** Stores one event, in the caller's transaction (the key's company and name are read from the key). */
export async function recordCutoverEvent(tx: Queryable, event: NewCutoverEvent): Promise<void> {
  const { at, action, legacyKeyId, by, admin, reason, forcedAtStage, successorKeyId } = event;
  await tx.query(sql`
    INSERT INTO legacy_key_events (legacy_key_id, company_id, at, action, by, admin_user_id, admin_email, reason, forced_at_stage, successor_key_id)
    SELECT id, company_id, ${at}, ${action}, ${by}, ${admin?.userId ?? null}, ${admin?.email ?? null}, ${reason}, ${forcedAtStage}, ${successorKeyId}
    FROM legacy_keys WHERE id = ${legacyKeyId}`);
}

/** The latest events of the companies' keys, newest first. */
export async function recentCutoverEvents(db: Queryable, companyIds: readonly string[], limit = RECENT_CUTOVER_EVENTS): Promise<CutoverEvent[]> {
  const rows = await db.query<{
    at: string;
    action: CutoverAction;
    legacy_key_id: string;
    legacy_key_name: string;
    company_id: string;
    by: DisabledBy;
    admin_user_id: string | null;
    admin_email: string | null;
    reason: string | null;
    forced_at_stage: CutoverStage | null;
    successor_key_id: string | null;
  }>(sql`
    SELECT e.at, e.action, e.legacy_key_id, l.name AS legacy_key_name, e.company_id, e.by, e.admin_user_id, e.admin_email,
      e.reason, e.forced_at_stage, e.successor_key_id
    FROM legacy_key_events e JOIN legacy_keys l ON l.id = e.legacy_key_id
    WHERE e.company_id = ANY(${[...companyIds]}::text[])
    ORDER BY e.at DESC, e.seq DESC
    LIMIT ${limit}`);
  return rows.map((row) => ({
    at: row.at,
    action: row.action,
    legacyKeyId: row.legacy_key_id,
    legacyKeyName: row.legacy_key_name,
    companyId: row.company_id,
    by: row.by,
    admin: row.admin_user_id === null ? null : { userId: row.admin_user_id, email: row.admin_email ?? '' },
    reason: row.reason,
    forcedAtStage: row.forced_at_stage,
    successorKeyId: row.successor_key_id,
  }));
}
