import { maskedKey } from '../access/api-keys.js';
import type { Capability } from '../access/capabilities.js';
import { replaceSuccessorCommand } from './reissue-steps.js';

/*
 * Where a legacy key stands in its cutover to v4 (the spec's reissue steps 5 and 6), derived only
 * from what the service records: the key's creation and v2 calls, its successor v4 key's minting and
 * the capabilities its successful calls exercised, its disabling and the undo of one. The successor
 * works once its calls cover what the key's v2 calls in the usage window need, so a new kind of v2
 * call moves the key back. Pure, so the clock is the caller's.
 */

/**
 * v2_unmovable_only: the successor works and the key's only v2 calls for the quiet period have no v4
 * successor; they work until the sunset, so such a key never reaches v2_quiet while they go on.
 */
export const CUTOVER_STAGES = ['v2_only', 'successor_minted', 'successor_working', 'v2_unmovable_only', 'v2_quiet', 'v2_disabled'] as const;
export type CutoverStage = (typeof CUTOVER_STAGES)[number];

export const DISABLED_BY = ['operator', 'admin', 'policy'] as const;
/** Who disabled a legacy key: the operator's CLI, an admin (API or dashboard) or the automatic policy. */
export type DisabledBy = (typeof DISABLED_BY)[number];

export const ENABLED_BY = ['operator', 'admin'] as const;
/** Who undid a disable: the operator's CLI or an admin (API or dashboard); never the policy. */
export type EnabledBy = (typeof ENABLED_BY)[number];

const DAY_MS = 86_400_000;

/** How long a key with a working successor goes without a v2 call before it is quiet, unless sunset.yaml's cutover says otherwise. */
export const DEFAULT_QUIET_DAYS = 14;

/** The usage window of a successor's least capability set, as the `svc migrate audit --key` default. */
export const USAGE_WINDOW_DAYS = 30;

/** The first UTC day of the usage window at `now`. */
export function usageWindowStart(now: Date): string {
  return new Date(now.getTime() - USAGE_WINDOW_DAYS * DAY_MS).toISOString().slice(0, 10);
}

export interface SuccessorFacts {
  keyId: string;
  userId: string;
  capabilities: Capability[];
  mintedAt: string;
  /** Its first successful v4 call. */
  firstUsedAt: string | null;
  /** Each capability its successful v4 calls exercised, with the first such call. */
  exercised: Array<{ capability: Capability; at: string }>;
  /** Neither revoked nor bound to a disabled user. */
  active: boolean;
}

export interface CutoverFacts {
  /** The legacy key's id, for the commands of its next step. */
  keyId: string;
  createdAt: string;
  /** The last v2 call. */
  lastUsedAt: string | null;
  /** The UTC day (YYYY-MM-DD) of its last v2 call with a v4 successor, null if none in the quiet period or the usage window. */
  lastMovableDay: string | null;
  /** The capabilities the key's v2 calls in the usage window need in v4 (the least set, as the audit gives it). */
  needed: Capability[];
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
  /** What the active successor's calls still miss of the capabilities the key's v2 calls need (both empty without one). */
  coverage: {
    needed: Capability[];
    /** Needed, but the successor does not hold them: only a replaced successor covers them. */
    lacking: Capability[];
    /** Needed and held, but no successful v4 call has exercised them yet. */
    unexercised: Capability[];
  };
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
const earlier = (a: string, b: string) => (a < b ? a : b);

/** What an active successor's calls still miss of the needed capabilities, and when its calls covered them all. */
function coverageOf(successor: SuccessorFacts | null, needed: readonly Capability[]): Cutover['coverage'] & { coveredAt: string | null } {
  if (!successor) return { needed: [...needed], lacking: [], unexercised: [], coveredAt: null };
  const firstUse = new Map(successor.exercised.map((use) => [use.capability, use.at]));
  const lacking = needed.filter((c) => !successor.capabilities.includes(c));
  const unexercised = needed.filter((c) => successor.capabilities.includes(c) && !firstUse.has(c));
  const covered = successor.firstUsedAt !== null && lacking.length === 0 && unexercised.length === 0;
  // Covered when the last needed capability was first exercised (its first call of any kind, when none is needed).
  const coveredAt = covered ? needed.map((c) => firstUse.get(c)!).reduce(later, successor.firstUsedAt!) : null;
  return { needed: [...needed], lacking, unexercised, coveredAt };
}

/** When the key's last v2 call with a v4 successor was, at the latest: the end of its UTC day, or its last v2 call if earlier. */
function lastMovableCall(facts: CutoverFacts): string {
  if (facts.lastMovableDay === null) return facts.createdAt;
  const dayEnd = new Date(Date.parse(`${facts.lastMovableDay}T00:00:00Z`) + DAY_MS).toISOString();
  return facts.lastUsedAt === null ? dayEnd : earlier(dayEnd, facts.lastUsedAt);
}

/** The stage of one legacy key at `now`, with the date of each stage it reached. */
export function cutoverOf(facts: CutoverFacts, now: Date, quietDays: number, autoDisable: boolean): Cutover {
  // An undone disable gives the integration a full quiet period again, so the policy does not redo it at once.
  const sinceUndo = (at: string) => (facts.enabled ? later(at, facts.enabled.at) : at);
  const quietSince = sinceUndo(facts.lastUsedAt ?? facts.createdAt);
  const quietFrom = new Date(Date.parse(quietSince) + quietDays * DAY_MS).toISOString();
  const movableQuietFrom = new Date(Date.parse(sinceUndo(lastMovableCall(facts))) + quietDays * DAY_MS).toISOString();
  // A revoked successor (or one of a disabled user) no longer carries the integration: the cutover starts over.
  const successor = facts.successor?.active ? facts.successor : null;
  const { coveredAt: workingAt, ...coverage } = coverageOf(successor, facts.needed);
  const until = facts.disabled?.at ?? now.toISOString();
  const quietAt = workingAt !== null && quietFrom <= until ? later(quietFrom, workingAt) : null;
  // Only when v2 calls without a successor went on after the others stopped: a key whose last call moved goes straight to quiet.
  const unmovableOnlyAt = workingAt !== null && movableQuietFrom < quietFrom && movableQuietFrom <= until ? later(movableQuietFrom, workingAt) : null;
  const at: Record<CutoverStage, string | null> = {
    v2_only: facts.createdAt,
    successor_minted: successor?.mintedAt ?? null,
    successor_working: workingAt,
    v2_unmovable_only: unmovableOnlyAt,
    v2_quiet: quietAt,
    v2_disabled: facts.disabled?.at ?? null,
  };
  const stage = [...CUTOVER_STAGES].reverse().find((s) => at[s] !== null)!;
  return {
    stage,
    stages: CUTOVER_STAGES.map((s) => ({ stage: s, at: at[s] })),
    successor: facts.successor ? { ...facts.successor, maskedKey: maskedKey(facts.successor.keyId) } : null,
    coverage,
    quietDays,
    quietSince,
    quietFrom,
    disabled: facts.disabled,
    enabled: facts.enabled,
    nextStep: nextStep(stage, facts, coverage, quietFrom, autoDisable),
  };
}

function nextStep(stage: CutoverStage, facts: CutoverFacts, coverage: Cutover['coverage'], quietFrom: string, autoDisable: boolean): string | null {
  switch (stage) {
    case 'v2_only':
      if (!facts.hasV4Successor) return 'None of its scopes has a v4 successor: it stays on v2 until the sunset';
      return facts.successor
        ? `Mint a new successor v4 key: the previous one (${maskedKey(facts.successor.keyId)}) no longer works`
        : 'Mint its successor v4 key for the integration';
    case 'successor_minted':
      return successorMintedStep(facts, coverage);
    case 'successor_working':
      return `Move the remaining calls to v4: with no further v2 call, the key is quiet on ${quietFrom.slice(0, 10)}`;
    case 'v2_unmovable_only':
      return 'Its remaining v2 calls have no v4 successor: they work until the sunset (disabling the key stops them)';
    case 'v2_quiet':
      return autoDisable ? 'Disabled automatically at the next policy check' : 'Disable the legacy key: its successor works and v2 is quiet';
    case 'v2_disabled':
      return null;
  }
}

/** What keeps a minted successor from working: capabilities it lacks, then ones its calls have not exercised. */
function successorMintedStep(facts: CutoverFacts, { lacking, unexercised }: Cutover['coverage']): string {
  const successor = facts.successor!;
  const key = maskedKey(successor.keyId);
  if (lacking.length > 0) {
    return `Replace the successor key ${key}: the key's v2 calls need ${lacking.join(', ')}, which it lacks (\`${replaceSuccessorCommand(facts.keyId, successor.capabilities, lacking)}\`)`;
  }
  if (unexercised.length > 0) {
    return `Make successful v4 calls with the successor key ${key} needing ${unexercised.join(', ')}, as the key's v2 calls do: it works once its calls cover them`;
  }
  return `Make a first v4 call with the successor key ${key} (GET /v4/me): no v2 call of the key in the last ${USAGE_WINDOW_DAYS} days has a v4 successor, so its first success shows it working`;
}
