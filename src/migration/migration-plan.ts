import { CAPABILITIES, type Capability } from '../access/capabilities.js';
import { legacyKeyFor } from './cutover.js';
import { USAGE_WINDOW_DAYS, usageWindowStart, type Cutover } from '../legacy/cutover-stage.js';
import { dedicatedUserEmail, legacyKeyUsage, type LegacyReadDeps } from '../legacy/legacy-keys.js';
import { buildMigrationGuide, routeAnchor, type FieldChange, type GuideCall, type GuideExample, type GuideEndpoint, type MigrationGuide } from './migration-guide.js';
import type { Mappings } from '../legacy/mappings.js';
import { GUIDE_PATH } from './pages/migration-guide.js';
import { reissueSteps, type ReissueStep } from '../legacy/reissue-steps.js';
import { leastCapabilities } from '../legacy/scope-rules.js';
import { sunsetStatus, type SunsetStatus } from '../legacy/sunset-status.js';

/*
 * One integration's migration plan, from what its legacy key really called in the usage window:
 * each v2 endpoint with its v4 replacement and field changes (the guide's own sections, not
 * recomputed), busiest first; what stays on v2 and why; the least capabilities of its successor
 * key; and the steps to the end of its cutover with the exact commands, each marked done from the
 * stage the service records.
 */


interface Called {
  /** As served: `GET /v2/employees/:id`. */
  endpoint: string;
  scope: string;
  calls: number;
  lastDay: string;
  /** The endpoint's section of the guide page. */
  guide: string;
}

export interface PlanEndpoint extends Called {
  successor: GuideCall[];
  capabilities: Capability[];
  lookupCapabilities: Capability[];
  changes: FieldChange[];
  example: GuideExample | undefined;
}

export interface PlanStaysOnV2 extends Called {
  reason: string;
  instead: string | undefined;
}

export interface PlanStep extends Omit<ReissueStep, 'id'> {
  id: ReissueStep['id'] | 'read_guide' | 'move_calls';
  done: boolean;
}

export interface MigrationPlan {
  generatedAt: string;
  key: { id: string; name: string; companyId: string; scopes: string[]; lastUsedAt: string | null; disabledAt: string | null };
  window: { days: number; since: string };
  sunset: SunsetStatus;
  totals: { calls: number; movable: number; staying: number };
  /** The endpoints with a v4 successor, most called first. */
  endpoints: PlanEndpoint[];
  /** The endpoints with no v4 successor, most called first: they stop at the sunset. */
  staysOnV2: PlanStaysOnV2[];
  capabilities: {
    /** The least set for the scopes called in the window: what the successor key is minted with by default. */
    minimal: Capability[];
    /** Needed besides, only where the integration sends a value v4 looks up (a team's name for its id). */
    forLookups: Capability[];
    /** At most: the v4 reach of the key's scopes. */
    allowed: Capability[];
  };
  /** The dedicated non-personal user the successor key acts as (created by the mint). */
  successorUser: string;
  steps: PlanStep[];
  cutover: Cutover;
}

// The maps do not change while the process runs.
const guides = new WeakMap<Mappings, Map<string, GuideEndpoint>>();
function guideEndpoints(mappings: Mappings): Map<string, GuideEndpoint> {
  let byAnchor = guides.get(mappings);
  if (!byAnchor) {
    const guide: MigrationGuide = buildMigrationGuide(mappings);
    byAnchor = new Map(guide.endpoints.map((endpoint) => [endpoint.anchor, endpoint]));
    guides.set(mappings, byAnchor);
  }
  return byAnchor;
}

/** Usage records name an endpoint as `METHOD /path` without the v2 prefix, as the gateway labels it. */
const anchorOfLabel = (label: string) => {
  const [method = '', path = ''] = label.split(' ');
  return routeAnchor({ method: method as GuideEndpoint['method'], path });
};

/** The plan of one legacy key of the caller's companies (another company's key is 404, as absent). */
export async function buildMigrationPlan(core: LegacyReadDeps, companyIds: readonly string[], id: string): Promise<MigrationPlan> {
  const key = await legacyKeyFor(core, companyIds, id);
  const now = core.now();
  const since = usageWindowStart(now);
  const usage = (await legacyKeyUsage(core, id)).filter((row) => row.day >= since);
  const byAnchor = guideEndpoints(core.mappings);
  const { prefix } = core.mappings.sunset;

  const called = new Map<string, { label: string; scope: string; calls: number; lastDay: string }>();
  for (const row of usage) {
    const entry = called.get(row.endpoint) ?? { label: row.endpoint, scope: row.scope, calls: 0, lastDay: row.day };
    entry.calls += row.calls;
    if (row.day > entry.lastDay) entry.lastDay = row.day;
    called.set(row.endpoint, entry);
  }
  const busiestFirst = [...called.values()].sort((a, b) => b.calls - a.calls || a.label.localeCompare(b.label));

  const endpoints: PlanEndpoint[] = [];
  const staysOnV2: PlanStaysOnV2[] = [];
  for (const { label, scope, calls, lastDay } of busiestFirst) {
    const section = byAnchor.get(anchorOfLabel(label));
    const common = { scope, calls, lastDay };
    if (!section) {
      // Recorded under a route the maps no longer serve.
      const [method, path] = label.split(' ');
      staysOnV2.push({ ...common, endpoint: `${method} ${prefix}${path}`, guide: GUIDE_PATH, reason: 'no longer served by the gateway', instead: undefined });
      continue;
    }
    const served = { ...common, endpoint: `${section.method} ${section.path}`, guide: `${GUIDE_PATH}#${section.anchor}` };
    if (section.noSuccessor) {
      staysOnV2.push({ ...served, reason: section.noSuccessor.reason, instead: section.noSuccessor.instead });
    } else {
      const { successor, capabilities, lookupCapabilities, changes, example } = section;
      endpoints.push({ ...served, successor, capabilities, lookupCapabilities, changes, example });
    }
  }

  const minimal = leastCapabilities(core.mappings.scopes, key.scopes, { rows: usage, since });
  const lookups = new Set(endpoints.flatMap((e) => e.lookupCapabilities).filter((c) => !minimal.includes(c)));
  const sum = (rows: { calls: number }[]) => rows.reduce((total, row) => total + row.calls, 0);
  const plan: Omit<MigrationPlan, 'steps'> = {
    generatedAt: now.toISOString(),
    key: { id: key.id, name: key.name, companyId: key.companyId, scopes: key.scopes, lastUsedAt: key.lastUsedAt, disabledAt: key.disabledAt },
    window: { days: USAGE_WINDOW_DAYS, since },
    sunset: sunsetStatus(core.mappings.sunset, now),
    totals: { calls: sum(endpoints) + sum(staysOnV2), movable: sum(endpoints), staying: sum(staysOnV2) },
    endpoints,
    staysOnV2,
    capabilities: { minimal, forLookups: CAPABILITIES.filter((c) => lookups.has(c)), allowed: key.capabilities },
    successorUser: dedicatedUserEmail('v4-successor', key.id, key.companyId),
    cutover: key.cutover,
  };
  return { ...plan, steps: stepsOf(plan) };
}

function stepsOf(plan: Omit<MigrationPlan, 'steps'>): PlanStep[] {
  const { key, cutover, endpoints, staysOnV2, capabilities } = plan;
  const reached = (stage: Cutover['stage']) => cutover.stages.some((s) => s.stage === stage && s.at !== null);
  const successor = cutover.successor?.active ? cutover.successor : null;
  const disabled = cutover.disabled !== null;
  const steps: PlanStep[] = [
    {
      id: 'read_guide',
      text: `Read the guide's section of each endpoint below (${GUIDE_PATH}): its v4 call(s), field changes and example`,
      command: null,
      done: disabled,
    },
  ];
  if (capabilities.allowed.length === 0) {
    steps.push({ id: 'mint_successor', text: 'Nothing to mint: none of the key’s scopes has a v4 successor, so it stays on v2 until the sunset', command: null, done: false });
    return steps;
  }
  const { mint, firstCall, quiet, disable } = reissueSteps({
    keyId: key.id,
    successorUser: plan.successorUser,
    capabilities: capabilities.minimal,
    allowed: capabilities.allowed,
    windowDays: plan.window.days,
    successor,
    coverage: successor ? cutover.coverage : null,
    quiet: { days: cutover.quietDays, from: cutover.quietFrom },
    staysOnV2: staysOnV2.map((e) => e.endpoint),
  });
  const quietDone = reached('v2_quiet') || disabled;
  // Every call with a v4 successor has moved once only calls without one are left.
  const movedDone = reached('v2_unmovable_only') || quietDone;
  steps.push(
    { ...mint, done: (successor !== null && cutover.coverage.lacking.length === 0) || disabled },
    { ...firstCall, done: reached('successor_working') || disabled },
    ...endpoints.map(
      (e): PlanStep => ({
        id: 'move_calls',
        text: `Move ${e.endpoint} (${e.calls} call(s)) to ${e.successor.map((call) => `${call.method} ${call.path}`).join(', then ')}: ${e.guide}`,
        command: null,
        done: movedDone,
      }),
    ),
    { ...quiet, done: quietDone },
    { ...disable, done: disabled },
  );
  return steps;
}
