import { closest } from '../../src/kit/did-you-mean.js';
import { usageError } from '../exit-codes.js';
import { callsSince, leastCapabilities, ruleCovers, ruleFor } from '../../src/legacy/scope-rules.js';
import { brownoutNotice, sunsetStatus, type SunsetStatus } from '../../src/legacy/sunset-status.js';
import { forcedDisableCommand, reissueSteps, type ReissueStep } from '../../src/legacy/reissue-steps.js';
import type { Cutover } from '../../src/legacy/cutover-stage.js';
import { SCOPE_STATUSES, type ScopeRule, type ScopeStatus, type ScopeTable } from './scope-table.js';

/*
 * The scope audit: for each v2 scope of an integration, what it becomes in v4 and whether it is
 * still used; then the least v4 key to mint instead, the reissue steps the plan gives too, and the
 * days left.
 */

/** What --fail-on may name: a status, or `unused` (granted, never called in the window). */
export const FAIL_ON_VALUES = [...SCOPE_STATUSES, 'unused'] as const;
export type FailOn = (typeof FAIL_ON_VALUES)[number];
export const DEFAULT_FAIL_ON: FailOn[] = ['no-successor', 'mapped-broader'];

export interface UsageRow {
  day: string;
  endpoint: string;
  scope: string;
  calls: number;
}

/** The legacy key an audit reads through the admin API (`--key`). */
export interface AuditedKey {
  id: string;
  companyId: string;
  name: string;
  scopes: string[];
  /** From the admin API: when the key was disabled (retired), and its last v2 call. */
  disabledAt?: string | null;
  lastUsedAt?: string | null;
  /** From the admin API: its successor, if minted, and when it goes quiet by the server's count. */
  cutover?: Pick<Cutover, 'successor' | 'coverage' | 'quietDays' | 'quietFrom'>;
}

export interface AuditInput {
  scopes: string[];
  /** Where the scopes came from, for the report's title. */
  source: string;
  key?: AuditedKey;
  /** The key's usage; present only with --key. */
  usage?: UsageRow[];
  days: number;
  asOf: Date;
  failOn: FailOn[];
  ignore: string[];
}

export interface ScopeFinding {
  scope: string;
  /** The wildcard scope (`api.orders.*`) the integration holds that grants this one; null when held as such. */
  grantedAs: string | null;
  status: ScopeStatus;
  capability: string | null;
  endpoints: string[];
  /** The note of a mapped-broader scope or the reason of one without a v4 group. */
  comment: string | null;
  /** With --key: calls in the window and the last day called (ever); null without usage data. */
  calls: number | null;
  lastCalled: string | null;
  ignored: boolean;
  /** Granted but not called in the window: to drop, so it fails only on `unused`. */
  toDrop: boolean;
  /** Why it fails the audit under --fail-on; empty when it does not. */
  failsOn: FailOn[];
}

export interface AuditReport {
  source: string;
  key: AuditedKey | null;
  asOf: string;
  windowDays: number | null;
  scopes: ScopeFinding[];
  /** With --key: `retired` (disabled), `quiet` (no v2 call in the window) or `active`; null without a key. */
  keyState: KeyState | null;
  summary: {
    capabilities: string[];
    unusedScopes: string[];
    stayOnV2: string[];
    review: string[];
    /** `svc legacy-keys mint-successor …`; null when there is nothing to mint, or a successor is minted already. */
    mintCommand: string | null;
    checklist: string[];
    sunset: string;
    daysToSunset: number;
    brownouts: SunsetStatus['brownouts'];
    /** The brownout on as of the audit's date, or the next one; null when none is left. */
    brownoutNotice: string | null;
  };
  failOn: FailOn[];
  findings: string[];
}

export type KeyState = 'active' | 'quiet' | 'retired';

const DAY_MS = 86_400_000;

/** A held scope as table rules: its own rule, or each rule under a held `prefix.*` wildcard without a rule of its own. */
function rulesOf(table: ScopeTable, scope: string): { rule: ScopeRule; grantedAs: string | null }[] {
  const own = ruleFor(table.rules, scope);
  if (own) return [{ rule: own, grantedAs: null }];
  return scope.endsWith('.*') ? table.rules.filter((r) => ruleCovers(scope, r.name)).map((rule) => ({ rule, grantedAs: scope })) : [];
}

/** Refuses unknown scopes all at once, each with the nearest known name. */
export function checkScopes(table: ScopeTable, scopes: readonly string[]): void {
  const names = table.rules.map((r) => r.name);
  const unknown = scopes.filter((s) => rulesOf(table, s).length === 0);
  if (unknown.length === 0) return;
  const problems = unknown.map((s) => {
    const suggestion = closest(names, s);
    return `unknown v2 scope ${s}${suggestion ? ` (did you mean ${suggestion}?)` : ''}`;
  });
  throw usageError(problems.join('; '), problems);
}

export function parseFailOn(text: string): FailOn[] {
  const values = text.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = values.filter((v) => !(FAIL_ON_VALUES as readonly string[]).includes(v));
  if (bad.length > 0) throw usageError(`--fail-on ${bad.join(', ')}: use a comma-separated list of ${FAIL_ON_VALUES.join(', ')}, or none`);
  return values as FailOn[];
}

function keyStateOf(key: AuditedKey | undefined, findings: ScopeFinding[]): KeyState | null {
  if (!key) return null;
  if (key.disabledAt) return 'retired';
  return findings.every((f) => f.calls === 0) ? 'quiet' : 'active';
}

const stepLine = (step: ReissueStep) => (step.command === null ? step.text : `${step.text}: \`${step.command}\``);

/** The plan's reissue path (mint the successor, a first v4 call, quiet, disable), or why there is nothing to mint. */
function checklistOf(input: AuditInput, report: { capabilities: string[]; stayOnV2: string[]; keyState: KeyState | null }, quietDays: number): { checklist: string[]; mintCommand: string | null } {
  const { capabilities, stayOnV2, keyState } = report;
  // Offline, a shell variable stands for the key, as $BASE_URL and $V4_KEY do in the first call.
  const keyId = input.key?.id ?? '$LEGACY_KEY_ID';
  if (keyState === 'retired') {
    return {
      checklist: [`Nothing to reissue: the v2 key was disabled on ${input.key!.disabledAt!.slice(0, 10)}; mint a v4 key only if the integration still runs somewhere`],
      mintCommand: null,
    };
  }
  if (capabilities.length === 0) {
    const why =
      keyState === 'quiet'
        ? `the key made no v2 call in the last ${input.days} days`
        : `no scope ${input.usage ? `it called in the last ${input.days} days` : 'of this integration'} has a v4 successor`;
    // With no successor the key never reaches v2_quiet, so its disable is forced, with the reason on record.
    const end =
      stayOnV2.length > 0
        ? `Keep the v2 key until the sunset for the scopes without a v4 successor: ${stayOnV2.join(', ')}`
        : `Disable the v2 key once its owner confirms the integration is gone: \`${forcedDisableCommand(keyId, 'integration gone, confirmed by its owner')}\``;
    return { checklist: [`Mint no v4 key: ${why}`, end], mintCommand: null };
  }
  const successor = input.key?.cutover?.successor;
  const { mint, firstCall, quiet, disable } = reissueSteps({
    keyId,
    // The mint derives the user from the key; the audit does not repeat the derivation.
    successorUser: null,
    capabilities,
    // Read only when there is nothing to mint, answered above.
    allowed: capabilities,
    windowDays: input.days,
    successor: successor?.active ? successor : null,
    coverage: successor?.active ? (input.key?.cutover?.coverage ?? null) : null,
    quiet: { days: input.key?.cutover?.quietDays ?? quietDays, from: input.key?.cutover?.quietFrom ?? null },
    staysOnV2: stayOnV2,
  });
  return {
    checklist: [
      stepLine(mint),
      stepLine(firstCall),
      'Move each call to its v4 successor as the guide says (/docs/migration), pagination first (lists return the envelope, at most 50 per page)',
      stepLine(quiet),
      stepLine(disable),
    ],
    mintCommand: mint.command,
  };
}

export function buildReport(table: ScopeTable, input: AuditInput): AuditReport {
  const held = [...new Set(input.scopes)];
  checkScopes(table, held);
  const since = new Date(input.asOf.getTime() - input.days * DAY_MS).toISOString().slice(0, 10);
  const expanded = held.flatMap((scope) => rulesOf(table, scope).map(({ rule, grantedAs }) => ({ scope: grantedAs === null ? scope : rule.name, rule, grantedAs })));
  const unique = expanded.filter((e, i) => expanded.findIndex((other) => other.scope === e.scope) === i);
  const retired = Boolean(input.key?.disabledAt);
  const findings: ScopeFinding[] = unique.map(({ scope, rule, grantedAs }) => {
    const calls = input.usage ? callsSince(input.usage, scope, since) : null;
    const lastCalled = input.usage?.filter((row) => ruleCovers(scope, row.scope)).map((row) => row.day).sort().at(-1) ?? null;
    const ignored = input.ignore.includes(scope) || (grantedAs !== null && input.ignore.includes(grantedAs));
    const toDrop = calls === 0;
    // A scope to drop is advice, not a failure: it fails only when --fail-on names `unused`. A retired key's scopes reach nothing any more.
    const failsOn = ignored || retired ? [] : input.failOn.filter((f) => (f === 'unused' ? toDrop : f === rule.status && !toDrop));
    return {
      scope,
      grantedAs,
      status: rule.status,
      capability: rule.capability ?? null,
      endpoints: rule.endpoints,
      comment: rule.note ?? rule.reason ?? null,
      calls,
      lastCalled,
      ignored,
      toDrop,
      failsOn,
    };
  });
  // Translate only what the integration calls: unused scopes earn no capability.
  const capabilities = leastCapabilities(table.rules, findings.map((f) => f.scope), input.usage ? { rows: input.usage, since } : undefined);
  const keyState = keyStateOf(input.key, findings);
  const kept = findings.filter((f) => !f.toDrop);
  const stayOnV2 = kept.filter((f) => f.status === 'no-successor').map((f) => f.scope);
  const review = kept.filter((f) => f.status === 'mapped-broader').map((f) => f.scope);
  const status = sunsetStatus(table.schedule, input.asOf);
  const { checklist, mintCommand } = checklistOf(input, { capabilities, stayOnV2, keyState }, table.quietDays);
  return {
    source: input.source,
    key: input.key ?? null,
    asOf: input.asOf.toISOString().slice(0, 10),
    windowDays: input.usage ? input.days : null,
    scopes: findings,
    keyState,
    summary: {
      capabilities,
      unusedScopes: findings.filter((f) => f.toDrop).map((f) => f.scope),
      stayOnV2,
      review,
      mintCommand,
      checklist,
      sunset: status.at.slice(0, 10),
      daysToSunset: status.daysLeft,
      brownouts: status.brownouts,
      brownoutNotice: brownoutNotice(status.brownouts, input.asOf) ?? null,
    },
    failOn: input.failOn,
    findings: findings.filter((f) => f.failsOn.length > 0).map((f) => f.scope),
  };
}
