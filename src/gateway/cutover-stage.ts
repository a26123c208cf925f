import { maskedKey } from '../access/api-keys.js';
import type { Capability } from '../access/capabilities.js';

/*
 * Where a legacy key stands in its cutover to v4 (the spec's reissue steps 5 and 6), derived only
 * from what the service records: the key's creation and last v2 call, its successor v4 key's minting
 * and first successful call, its disabling and the undo of one. Pure, so the clock is the caller's.
 */

export const CUTOVER_STAGES = ['v2_only', 'successor_minted', 'successor_working', 'v2_quiet', 'v2_disabled'] as const;
export type CutoverStage = (typeof CUTOVER_STAGES)[number];

export const DISABLED_BY = ['operator', 'admin', 'policy'] as const;
/** Who disabled a legacy key: the operator's CLI, an admin (API or dashboard) or the automatic policy. */
export type DisabledBy = (typeof DISABLED_BY)[number];

export const ENABLED_BY = ['operator', 'admin'] as const;
/** Who undid a disable: the operator's CLI or an admin (API or dashboard); never the policy. */
export type EnabledBy = (typeof ENABLED_BY)[number];

const DAY_MS = 86_400_000;

/** The usage window of a successor's least capability set, as the `svc migrate audit --key` default. */
export const USAGE_WINDOW_DAYS = 30;

export interface SuccessorFacts {
  keyId: string;
  userId: string;
  capabilities: Capability[];
  mintedAt: string;
  /** Its first successful v4 call. */
  firstUsedAt: string | null;
  /** Neither revoked nor bound to a disabled user. */
  active: boolean;
}

export interface CutoverFacts {
  createdAt: string;
  /** The last v2 call. */
  lastUsedAt: string | null;
  /** Whether any scope of the key has a v4 successor (else it stays on v2 until the sunset). */
  hasV4Successor: boolean;
  successor: SuccessorFacts | null;
  disabled: { at: string; by: DisabledBy; reason: string | null } | null;
  /** The last undo of a disable. */
  enabled: { at: string; by: EnabledBy; reason: string | null } | null;
}

export interface Cutover {
  stage: CutoverStage;
  /** Every stage in order, with when the key reached it; null for a stage not (or never) reached. */
  stages: Array<{ stage: CutoverStage; at: string | null }>;
  successor: (SuccessorFacts & { maskedKey: string }) | null;
  quietDays: number;
  /** The last v2 call, the key's creation or the undo of its disable, whichever is latest: the quiet period counts from it. */
  quietSince: string;
  /** When the key is, or will be if v2 is not called again, quiet for quietDays. */
  quietFrom: string;
  disabled: CutoverFacts['disabled'];
  enabled: CutoverFacts['enabled'];
  /** What moves the key to its next stage; null once disabled. */
  nextStep: string | null;
}

const later = (a: string, b: string) => (a > b ? a : b);

/** The stage of one legacy key at `now`, with the date of each stage it reached. */
export function cutoverOf(facts: CutoverFacts, now: Date, quietDays: number, autoDisable: boolean): Cutover {
  // An undone disable gives the integration a full quiet period again, so the policy does not redo it at once.
  const quietSince = facts.enabled ? later(facts.lastUsedAt ?? facts.createdAt, facts.enabled.at) : (facts.lastUsedAt ?? facts.createdAt);
  const quietFrom = new Date(Date.parse(quietSince) + quietDays * DAY_MS).toISOString();
  // A revoked successor (or one of a disabled user) no longer carries the integration: the cutover starts over.
  const successor = facts.successor?.active ? facts.successor : null;
  const workingAt = successor?.firstUsedAt ?? null;
  const until = facts.disabled?.at ?? now.toISOString();
  const quietAt = workingAt !== null && quietFrom <= until ? later(quietFrom, workingAt) : null;
  const at: Record<CutoverStage, string | null> = {
    v2_only: facts.createdAt,
    successor_minted: successor?.mintedAt ?? null,
    successor_working: workingAt,
    v2_quiet: quietAt,
    v2_disabled: facts.disabled?.at ?? null,
  };
  const stage = [...CUTOVER_STAGES].reverse().find((s) => at[s] !== null)!;
  return {
    stage,
    stages: CUTOVER_STAGES.map((s) => ({ stage: s, at: at[s] })),
    successor: facts.successor ? { ...facts.successor, maskedKey: maskedKey(facts.successor.keyId) } : null,
    quietDays,
    quietSince,
    quietFrom,
    disabled: facts.disabled,
    enabled: facts.enabled,
    nextStep: nextStep(stage, facts, quietFrom, autoDisable),
  };
}

function nextStep(stage: CutoverStage, facts: CutoverFacts, quietFrom: string, autoDisable: boolean): string | null {
  switch (stage) {
    case 'v2_only':
      if (!facts.hasV4Successor) return 'None of its scopes has a v4 successor: it stays on v2 until the sunset';
      return facts.successor
        ? `Mint a new successor v4 key: the previous one (${maskedKey(facts.successor.keyId)}) no longer works`
        : 'Mint its successor v4 key for the integration';
    case 'successor_minted':
      return 'Make a first v4 call with the successor key (GET /v4/me): its first success shows it working';
    case 'successor_working':
      return `Move the remaining calls to v4: with no further v2 call, the key is quiet on ${quietFrom.slice(0, 10)}`;
    case 'v2_quiet':
      return autoDisable ? 'Disabled automatically at the next policy check' : 'Disable the legacy key: its successor works and v2 is quiet';
    case 'v2_disabled':
      return null;
  }
}
