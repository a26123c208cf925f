import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { ScopeRuleLike } from '../../src/legacy/scope-rules.js';
import type { SunsetSchedule } from '../../src/legacy/sunset-status.js';
import { usageError } from '../exit-codes.js';
import { DEFAULT_QUIET_DAYS } from '../../src/legacy/cutover-stage.js';

/*
 * The bundled scope table (mappings/scopes.yaml) and sunset (mappings/sunset.yaml), read without
 * zod or the operation table so `svc migrate audit --scopes …` starts fast and works offline. The
 * server validates the same files in full (src/legacy/mappings.ts); test/cli/svc-audit.test.ts
 * proves this reader and that loader agree on every entry.
 */

export const SCOPE_STATUSES = ['mapped', 'mapped-broader', 'covered-by-order-type', 'no-successor'] as const;
export type ScopeStatus = (typeof SCOPE_STATUSES)[number];

export interface ScopeRule extends ScopeRuleLike {
  status: ScopeStatus;
  endpoints: string[];
  note: string | undefined;
  reason: string | undefined;
}

export interface ScopeTable {
  rules: ScopeRule[];
  /** The sunset and its brownout windows, from sunset.yaml. */
  schedule: SunsetSchedule;
  /** Days without a v2 call that make a key quiet (sunset.yaml `cutover.quietDays`, as the server reads it). */
  quietDays: number;
}

/** The maps shipped with the package, whether running from cli/ (tsx) or dist/cli/. */
export function bundledMappingsDir(): string {
  const candidates = ['../../mappings', '../../../mappings'].map((relative) => fileURLToPath(new URL(relative, import.meta.url)));
  return candidates.find((dir) => existsSync(join(dir, 'scopes.yaml'))) ?? candidates[0]!;
}

function readYaml(dir: string, file: string): unknown {
  try {
    return parse(readFileSync(join(dir, file), 'utf8'));
  } catch (error) {
    throw usageError(`The scope maps in ${dir} are unusable: ${file}: ${(error as Error).message}`);
  }
}

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);

export function readScopeTable(dir = bundledMappingsDir()): ScopeTable {
  const scopes = (readYaml(dir, 'scopes.yaml') as { scopes?: Record<string, Record<string, unknown>> } | null)?.scopes;
  const sunsetFile = readYaml(dir, 'sunset.yaml') as { sunset?: unknown; brownouts?: unknown; cutover?: { quietDays?: unknown } } | null;
  const sunset = new Date(String(sunsetFile?.sunset));
  if (!scopes || Number.isNaN(sunset.getTime())) throw usageError(`The scope maps in ${dir} are unusable: no scopes or no sunset date`);
  const brownouts = (Array.isArray(sunsetFile?.brownouts) ? (sunsetFile.brownouts as { start?: unknown; end?: unknown }[]) : []).map((w) => ({
    start: new Date(String(w.start)),
    end: new Date(String(w.end)),
  }));
  if (brownouts.some((w) => Number.isNaN(w.start.getTime()) || Number.isNaN(w.end.getTime()))) {
    throw usageError(`The scope maps in ${dir} are unusable: a brownout in sunset.yaml has no valid start or end`);
  }
  const rules = Object.entries(scopes).map(([name, entry]): ScopeRule => {
    const status = entry.status as ScopeStatus;
    if (!SCOPE_STATUSES.includes(status)) throw usageError(`The scope maps in ${dir} are unusable: ${name} has status ${String(status)}`);
    return {
      name,
      status,
      capability: text(entry.capability),
      endpoints: Array.isArray(entry.endpoints) ? entry.endpoints.map(String) : [],
      note: text(entry.note),
      reason: text(entry.reason),
    };
  });
  const quietDays = sunsetFile?.cutover?.quietDays ?? DEFAULT_QUIET_DAYS;
  if (typeof quietDays !== 'number' || !Number.isInteger(quietDays) || quietDays < 1) {
    throw usageError(`The scope maps in ${dir} are unusable: cutover.quietDays in sunset.yaml is not a whole number of days`);
  }
  return { rules, schedule: { sunset, brownouts }, quietDays };
}
