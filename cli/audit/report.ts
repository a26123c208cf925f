import { closest } from '../../src/did-you-mean.js';
import { usageError } from '../exit-codes.js';
import { ruleCovers, ruleFor, SCOPE_STATUSES, type ScopeStatus, type ScopeTable } from './scope-table.js';

/*
 * The scope audit: for each v2 scope of an integration, what it becomes in v4 and whether it is
 * still used; then the least v4 key to mint instead, the spec's reissue steps and the days left.
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
  user: string;
  /** The integration's company and the label of its new key; from the key with --key. */
  company?: string;
  name?: string;
}

export interface ScopeFinding {
  scope: string;
  status: ScopeStatus;
  capability: string | null;
  endpoints: string[];
  /** The note of a mapped-broader scope or the reason of one without a v4 group. */
  comment: string | null;
  /** With --key: calls in the window and the last day called (ever); null without usage data. */
  calls: number | null;
  lastCalled: string | null;
  ignored: boolean;
  /** Why it fails the audit under --fail-on; empty when it does not. */
  failsOn: FailOn[];
}

export interface AuditReport {
  source: string;
  key: AuditedKey | null;
  asOf: string;
  windowDays: number | null;
  scopes: ScopeFinding[];
  summary: {
    capabilities: string[];
    unusedScopes: string[];
    stayOnV2: string[];
    review: string[];
    userCommand: string;
    mintCommand: string | null;
    checklist: string[];
    sunset: string;
    daysToSunset: number;
  };
  failOn: FailOn[];
  findings: string[];
}

const DAY_MS = 86_400_000;

/** Refuses unknown scopes all at once, each with the nearest known name. */
export function checkScopes(table: ScopeTable, scopes: readonly string[]): void {
  const names = table.rules.map((r) => r.name);
  const unknown = scopes.filter((s) => !ruleFor(table, s));
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

const quote = (text: string) => (/^[A-Za-z0-9@._:,/+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

export function buildReport(table: ScopeTable, input: AuditInput): AuditReport {
  const scopes = [...new Set(input.scopes)];
  checkScopes(table, scopes);
  const since = new Date(input.asOf.getTime() - input.days * DAY_MS).toISOString().slice(0, 10);
  const findings: ScopeFinding[] = scopes.map((scope) => {
    const rule = ruleFor(table, scope)!;
    const rows = input.usage?.filter((row) => row.scope === scope || ruleCovers(scope, row.scope));
    const calls = rows ? rows.filter((row) => row.day >= since).reduce((sum, row) => sum + row.calls, 0) : null;
    const lastCalled = rows?.map((row) => row.day).sort().at(-1) ?? null;
    const ignored = input.ignore.includes(scope);
    const failsOn = ignored ? [] : input.failOn.filter((f) => f === rule.status || (f === 'unused' && calls === 0));
    return {
      scope,
      status: rule.status,
      capability: rule.capability ?? null,
      endpoints: rule.endpoints,
      comment: rule.note ?? rule.reason ?? null,
      calls,
      lastCalled,
      ignored,
      failsOn,
    };
  });
  // Translate only what the integration calls: unused scopes earn no capability.
  const needed = new Set(findings.filter((f) => f.capability && f.calls !== 0).map((f) => f.capability!));
  const capabilities = [...new Set(table.rules.map((r) => r.capability))].filter((c): c is string => c !== undefined && needed.has(c));
  const name = input.name ?? (input.key ? `${input.key.name} (v4)` : 'v4 integration');
  const company = input.company ?? input.key?.companyId ?? '<company-id>';
  const userCommand = `svc-server users create --email ${quote(input.user)} --name ${quote(name)} --role admin --company ${company} --non-personal`;
  const mintCommand =
    capabilities.length > 0 ? `svc-server keys mint --user ${quote(input.user)} --capabilities ${capabilities.join(',')} --name ${quote(name)}` : null;
  const stayOnV2 = findings.filter((f) => f.status === 'no-successor').map((f) => f.scope);
  const review = findings.filter((f) => f.status === 'mapped-broader').map((f) => f.scope);
  const checklist = [
    `Provision a dedicated non-personal user: \`${userCommand}\``,
    mintCommand
      ? `Mint a v4 key as that user with only the needed capabilities: \`${mintCommand}\``
      : 'Mint no v4 key: no scope of this integration has a v4 successor',
    'Send it in the `X-API-KEY` header',
    'Verify with `GET /v4/me`: `svc auth login --api-key <new key> && svc auth status`',
    'Adapt calls to the v4 contract changes, pagination first (lists return the envelope, at most 50 per page)',
    ...(stayOnV2.length > 0 ? [`Keep the v2 key until the sunset for the scopes without a v4 successor: ${stayOnV2.join(', ')}`] : []),
  ];
  return {
    source: input.source,
    key: input.key ?? null,
    asOf: input.asOf.toISOString().slice(0, 10),
    windowDays: input.usage ? input.days : null,
    scopes: findings,
    summary: {
      capabilities,
      unusedScopes: findings.filter((f) => f.calls === 0).map((f) => f.scope),
      stayOnV2,
      review,
      userCommand,
      mintCommand,
      checklist,
      sunset: table.sunset.toISOString().slice(0, 10),
      daysToSunset: Math.max(0, Math.ceil((table.sunset.getTime() - input.asOf.getTime()) / DAY_MS)),
    },
    failOn: input.failOn,
    findings: findings.filter((f) => f.failsOn.length > 0).map((f) => f.scope),
  };
}
