import type { Capability } from '../access/capabilities.js';
import type { MigrationDeps } from './deps.js';
import { sql } from '../store/sql.js';
import { successorCapabilities } from './cutover.js';
import { recentCutoverEvents, type CutoverEvent } from '../legacy/cutover-events.js';
import { CUTOVER_STAGES, usageWindowStart, type Cutover, type CutoverStage } from '../legacy/cutover-stage.js';
import { listLegacyKeys } from '../legacy/legacy-keys.js';
import { scopeEntryFor } from '../legacy/mappings.js';
import { sunsetStatus, type SunsetStatus } from '../legacy/sunset-status.js';

/*
 * What is left to migrate, for the dashboard of admins and ops: v2 traffic per company and per
 * legacy key over the last days, the endpoints still called, the scopes without a v4 successor
 * still in use, the keys that went quiet, each key's cutover stage and the latest cutover events, and
 * the days to the sunset. Read
 * from the gateway's per-key usage records, within the companies the caller administers.
 */

const DAY_MS = 86_400_000;

export interface MigrationReportOptions {
  companyIds: readonly string[];
  /** How many days of history, today included. */
  days?: number;
  /** A key with no call for this many days has gone quiet: a candidate for disabling (default: the maps' cutover.quietDays). */
  quietAfterDays?: number;
}

export interface MigrationReport {
  generatedAt: string;
  sunset: SunsetStatus;
  /** The UTC days of the series, oldest first. */
  days: string[];
  companies: Array<{ id: string; name: string; callsPerDay: number[]; total: number }>;
  keys: Array<{
    id: string;
    name: string;
    companyId: string;
    callsPerDay: number[];
    total: number;
    lastUsedAt: string | null;
    disabled: boolean;
    quiet: boolean;
    cutover: Cutover;
    /** What a successor key would get by default (suggested), and at most (allowed). */
    successorCapabilities: { suggested: Capability[]; allowed: Capability[] };
  }>;
  cutover: {
    quietDays: number;
    autoDisable: boolean;
    keysByStage: Record<CutoverStage, number>;
    /** The latest mints, replaces, disables and undos of these keys, newest first. */
    recentEvents: CutoverEvent[];
  };
  endpoints: Array<{ endpoint: string; scope: string; calls: number; lastDay: string }>;
  noSuccessorInUse: Array<{ scope: string; reason: string | undefined; calls: number; keyIds: string[] }>;
}

const utcDay = (time: number) => new Date(time).toISOString().slice(0, 10);

export async function buildMigrationReport(core: MigrationDeps, options: MigrationReportOptions): Promise<MigrationReport> {
  const { days = 30, quietAfterDays = core.mappings.sunset.cutover.quietDays } = options;
  const companyIds = [...options.companyIds];
  const now = core.now().getTime();
  const series = Array.from({ length: days }, (_, i) => utcDay(now - (days - 1 - i) * DAY_MS));
  const dayIndex = new Map(series.map((day, i) => [day, i]));

  const keys = await listLegacyKeys(core, { companyIds });
  // Also the successor's usage window, which may reach further back than the series.
  const windowStart = usageWindowStart(new Date(now));
  const usage = await core.db.query<{ key_id: string; day: string; endpoint: string; scope: string; calls: number }>(sql`
    SELECT u.legacy_key_id AS key_id, to_char(u.day, 'YYYY-MM-DD') AS day, u.endpoint, u.scope, u.calls
    FROM legacy_key_usage u JOIN legacy_keys l ON l.id = u.legacy_key_id
    WHERE l.company_id = ANY(${companyIds}::text[]) AND u.day >= ${windowStart < series[0]! ? windowStart : series[0]!}::date`);
  const companies = await core.db.query<{ id: string; name: string }>(
    sql`SELECT id, name FROM companies WHERE id = ANY(${companyIds}::text[]) ORDER BY name, id`,
  );
  const recentEvents = await recentCutoverEvents(core.db, companyIds);

  const zeros = () => series.map(() => 0);
  const perKey = new Map(keys.map((key) => [key.id, zeros()]));
  const companyOf = new Map(keys.map((key) => [key.id, key.companyId]));
  const perCompany = new Map(companies.map((company) => [company.id, zeros()]));
  const endpoints = new Map<string, { endpoint: string; scope: string; calls: number; lastDay: string }>();
  const noSuccessor = new Map<string, { scope: string; reason: string | undefined; calls: number; keyIds: Set<string> }>();
  for (const row of usage) {
    const i = dayIndex.get(row.day);
    if (i === undefined) continue;
    perKey.get(row.key_id)![i]! += row.calls;
    perCompany.get(companyOf.get(row.key_id)!)![i]! += row.calls;
    const endpoint = endpoints.get(row.endpoint) ?? { endpoint: row.endpoint, scope: row.scope, calls: 0, lastDay: row.day };
    endpoint.calls += row.calls;
    if (row.day > endpoint.lastDay) endpoint.lastDay = row.day;
    endpoints.set(row.endpoint, endpoint);
    const entry = scopeEntryFor(core.mappings.scopes, row.scope);
    if (entry?.status === 'no-successor') {
      const held = noSuccessor.get(row.scope) ?? { scope: row.scope, reason: entry.reason, calls: 0, keyIds: new Set<string>() };
      held.calls += row.calls;
      held.keyIds.add(row.key_id);
      noSuccessor.set(row.scope, held);
    }
  }

  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const keysByStage = Object.fromEntries(CUTOVER_STAGES.map((stage) => [stage, keys.filter((key) => key.cutover.stage === stage).length]));
  const quietSince = now - quietAfterDays * DAY_MS;
  return {
    generatedAt: new Date(now).toISOString(),
    sunset: sunsetStatus(core.mappings.sunset, new Date(now)),
    days: series,
    companies: companies.map((company) => {
      const callsPerDay = perCompany.get(company.id)!;
      return { ...company, callsPerDay, total: sum(callsPerDay) };
    }),
    keys: keys
      .map((key) => {
        const callsPerDay = perKey.get(key.id)!;
        return {
          id: key.id,
          name: key.name,
          companyId: key.companyId,
          callsPerDay,
          total: sum(callsPerDay),
          lastUsedAt: key.lastUsedAt,
          disabled: key.disabledAt !== null,
          quiet: key.disabledAt === null && (key.lastUsedAt === null || Date.parse(key.lastUsedAt) < quietSince),
          cutover: key.cutover,
          successorCapabilities: successorCapabilities(core, key, usage.filter((row) => row.key_id === key.id)),
        };
      })
      .sort((a, b) => b.total - a.total || a.name.localeCompare(b.name)),
    endpoints: [...endpoints.values()].sort((a, b) => b.calls - a.calls || a.endpoint.localeCompare(b.endpoint)),
    noSuccessorInUse: [...noSuccessor.values()]
      .map(({ keyIds, ...rest }) => ({ ...rest, keyIds: [...keyIds].sort() }))
      .sort((a, b) => b.calls - a.calls),
    cutover: {
      quietDays: core.mappings.sunset.cutover.quietDays,
      autoDisable: core.mappings.sunset.cutover.autoDisable,
      keysByStage: keysByStage as Record<CutoverStage, number>,
      recentEvents,
    },
  };
}
