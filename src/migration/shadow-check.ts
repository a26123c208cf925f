import type { FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import type { MigrationDeps } from './deps.js';
import { isSecretParam } from '../http/log-redaction.js';
import { callUpstream, type UpstreamResponse } from '../kit/upstream.js';
import type { CompareRules } from '../legacy/mappings.js';
import { compareBodies, type Difference, type DifferenceKind } from './shadow-diff.js';

/*
 * The shadow check (opt-in, for the weeks before a hostname moves to the gateway): a sample of the
 * translated v2 GETs is sent to the legacy v2 API as well, once the caller has its answer, and the
 * two answers are compared (shadow-diff.ts). The caller never waits for it and never sees it: the
 * legacy call runs after the response, bounded in number and time, and its failures are counted.
 * Counts and the last examples are kept in memory, per instance; Prometheus sums the instances.
 */

export type ShadowResult = 'equal' | 'different' | 'legacy_slow' | 'legacy_error' | 'dropped';

/** Examples kept per company, newest first. */
const EXAMPLES_PER_COMPANY = 20;
const DIFFERENCES_PER_EXAMPLE = 10;
/** Distinct field paths counted per route; later ones are counted together, so metric labels stay bounded. */
const PATHS_PER_ROUTE = 25;
const MAX_PATH_CHARS = 120;
export const OTHER_PATHS = '(other paths)';
/** The path of a status difference (200 translated, 404 on v2). */
export const STATUS_PATH = '(status)';
const PREVIEW_CHARS = 120;
const REDACTED = '[redacted]';

export interface ShadowTarget {
  route: { method: string; path: string; compare: CompareRules };
  key: { legacyKeyId: string; companyId: string; rawKey: string };
  /** The same call on the legacy v2 API; undefined when LEGACY_V2_UPSTREAM is not set. */
  legacyUrl: string | undefined;
}

interface PendingCall {
  route: string;
  rules: CompareRules;
  legacyKeyId: string;
  companyId: string;
  rawKey: string;
  url: string;
  requestId: string;
  /** The v2 path called, without its query. */
  path: string;
  /** The body the caller got; undefined when it got an error. */
  translated?: unknown;
}

interface Counts {
  compared: number;
  equal: number;
  different: number;
  legacySlow: number;
  legacyError: number;
  dropped: number;
}

const COUNT_OF: Record<ShadowResult, keyof Counts> = {
  equal: 'equal',
  different: 'different',
  legacy_slow: 'legacySlow',
  legacy_error: 'legacyError',
  dropped: 'dropped',
};

const noCounts = (): Counts => ({ compared: 0, equal: 0, different: 0, legacySlow: 0, legacyError: 0, dropped: 0 });

interface RouteTally {
  counts: Counts;
  /** By "kind path". */
  differences: Map<string, { path: string; kind: DifferenceKind; count: number }>;
}

export interface ShadowExample {
  at: string;
  route: string;
  path: string;
  legacyKeyId: string;
  differences: Array<{ path: string; kind: DifferenceKind; legacy?: string; translated?: string }>;
  /** Differences of this comparison beyond those listed. */
  moreDifferences: number;
}

export interface ShadowReport {
  enabled: boolean;
  sampleRate: number;
  since: string;
  totals: Counts;
  routes: Array<Counts & { route: string; differences: Array<{ path: string; kind: DifferenceKind; count: number }> }>;
  examples: ShadowExample[];
}

export interface ShadowOptions {
  upstream: string | undefined;
  sampleRate: number;
  timeoutMs: number;
  maxInFlight: number;
}

/** Whether a field path names a secret-like field anywhere along it (pinCode, apiKey, …). */
const secretPath = (path: string) => path.split('.').some((segment) => isSecretParam(segment.replace(/\[\]/g, '')));

/** A value as a short JSON text: secret-like fields masked, the caller's key never shown. */
function preview(value: unknown, path: string, rawKey: string): string {
  if (secretPath(path)) return REDACTED;
  const text = (JSON.stringify(value, (key, inner: unknown) => (key !== '' && isSecretParam(key) ? REDACTED : inner)) ?? 'undefined')
    .split(rawKey)
    .join(REDACTED);
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text;
}

export class ShadowCheck {
  private readonly pending = new WeakMap<FastifyRequest, PendingCall>();
  private readonly tallies = new Map<string, Map<string, RouteTally>>();
  private readonly examples = new Map<string, ShadowExample[]>();
  private readonly pathsByRoute = new Map<string, Set<string>>();
  private readonly checks: Counter<'route' | 'result'>;
  private readonly differenceCounter: Counter<'route' | 'path' | 'kind'>;
  private readonly since: string;
  private inFlight = 0;

  constructor(
    private readonly options: ShadowOptions,
    registry: Registry,
    private readonly now: () => Date,
    private readonly onFault: (error: unknown) => void,
  ) {
    this.since = now().toISOString();
    this.checks = new Counter({
      name: 'svc_v2_shadow_checks_total',
      help: 'Sampled v2 GETs also asked of the legacy v2 API, by route and result (equal, different, legacy_slow, legacy_error, dropped)',
      labelNames: ['route', 'result'] as const,
      registers: [registry],
    });
    this.differenceCounter = new Counter({
      name: 'svc_v2_shadow_differences_total',
      help: 'Compared v2 answers differing from the legacy v2 API at a field path (array indexes as [], at most 25 paths per route), by kind',
      labelNames: ['route', 'path', 'kind'] as const,
      registers: [registry],
    });
  }

  get enabled(): boolean {
    return this.options.upstream !== undefined && this.options.sampleRate > 0;
  }

  /**
   * Serves a translated v2 call; when it is a sampled GET, keeps what the caller gets for the
   * comparison that `afterAnswer` starts. Writes are never mirrored. Not async: an unsampled call,
   * nearly every one, gets `serve`'s own promise, without a layer around it.
   */
  translated<T extends { body: unknown }>(request: FastifyRequest, target: ShadowTarget, serve: () => Promise<T>): Promise<T> {
    const { route, key, legacyUrl } = target;
    if (!this.enabled || legacyUrl === undefined || route.method !== 'GET' || Math.random() >= this.options.sampleRate) return serve();
    const call: PendingCall = {
      route: `${route.method} ${route.path}`,
      rules: route.compare,
      legacyKeyId: key.legacyKeyId,
      companyId: key.companyId,
      rawKey: key.rawKey,
      url: legacyUrl,
      requestId: request.id,
      path: request.url.split('?')[0]!,
    };
    this.pending.set(request, call);
    return serve().then((answer) => {
      call.translated = answer.body;
      return answer;
    });
  }

  /** Called once the caller has been answered: starts the legacy call of a sampled request, if a slot is free. */
  afterAnswer(request: FastifyRequest, status: number): void {
    const call = this.pending.get(request);
    if (!call) return;
    this.pending.delete(request);
    if (this.inFlight >= this.options.maxInFlight) {
      this.record(call, 'dropped', []);
      return;
    }
    this.inFlight++;
    setImmediate(() => {
      void this.check(call, status).finally(() => this.inFlight--);
    });
  }

  private async check(call: PendingCall, status: number): Promise<void> {
    let legacy: UpstreamResponse;
    try {
      legacy = await callUpstream(call.url, {
        method: 'GET',
        headers: { 'x-api-key': call.rawKey, 'x-request-id': call.requestId, accept: 'application/json' },
        timeoutMs: this.options.timeoutMs,
      });
    } catch (error) {
      this.record(call, error instanceof Error && error.name === 'TimeoutError' ? 'legacy_slow' : 'legacy_error', []);
      return;
    }
    try {
      const differences = this.differencesOf(call, status, legacy);
      if (differences === undefined) this.record(call, 'legacy_error', []);
      else this.record(call, differences.length === 0 ? 'equal' : 'different', differences);
    } catch (error) {
      this.onFault(error);
    }
  }

  /** undefined when the legacy API failed (5xx, or a success that is not JSON). */
  private differencesOf(call: PendingCall, status: number, legacy: UpstreamResponse): Difference[] | undefined {
    if (legacy.status >= 500) return undefined;
    if (legacy.status !== status) return [{ path: STATUS_PATH, kind: 'changed', legacy: legacy.status, translated: status }];
    // Both refused alike: error bodies differ by design (the gateway's messages), so only statuses count.
    if (status >= 300) return [];
    let legacyBody: unknown;
    try {
      legacyBody = JSON.parse(legacy.text);
    } catch {
      return undefined;
    }
    // What the caller received: the body as serialised, without undefined fields.
    const translated: unknown = JSON.parse(JSON.stringify(call.translated ?? null));
    return compareBodies(legacyBody, translated, call.rules);
  }

  /** The path as a metric label: at most PATHS_PER_ROUTE distinct ones per route. */
  private labelOf(route: string, path: string): string {
    let seen = this.pathsByRoute.get(route);
    if (!seen) this.pathsByRoute.set(route, (seen = new Set()));
    if (seen.has(path)) return path;
    if (seen.size >= PATHS_PER_ROUTE || path.length > MAX_PATH_CHARS) return OTHER_PATHS;
    seen.add(path);
    return path;
  }

  private tallyOf(companyId: string, route: string): RouteTally {
    let routes = this.tallies.get(companyId);
    if (!routes) this.tallies.set(companyId, (routes = new Map()));
    let tally = routes.get(route);
    if (!tally) routes.set(route, (tally = { counts: noCounts(), differences: new Map() }));
    return tally;
  }

  private record(call: PendingCall, result: ShadowResult, differences: Difference[]): void {
    this.checks.inc({ route: call.route, result });
    const tally = this.tallyOf(call.companyId, call.route);
    tally.counts[COUNT_OF[result]]++;
    if (result === 'equal' || result === 'different') tally.counts.compared++;
    if (differences.length === 0) return;
    // Counted once per comparison: how many answers differ at a path, not how many elements.
    const distinct = new Map<string, { path: string; kind: DifferenceKind }>();
    for (const { path, kind } of differences) {
      const label = this.labelOf(call.route, path);
      distinct.set(`${kind} ${label}`, { path: label, kind });
    }
    for (const [id, { path, kind }] of distinct) {
      this.differenceCounter.inc({ route: call.route, path, kind });
      const held = tally.differences.get(id) ?? { path, kind, count: 0 };
      held.count++;
      tally.differences.set(id, held);
    }
    const examples = this.examples.get(call.companyId) ?? [];
    examples.unshift({
      at: this.now().toISOString(),
      route: call.route,
      path: call.path,
      legacyKeyId: call.legacyKeyId,
      differences: differences.slice(0, DIFFERENCES_PER_EXAMPLE).map(({ path, kind, legacy, translated }) => ({
        path,
        kind,
        ...(kind === 'added' ? {} : { legacy: preview(legacy, path, call.rawKey) }),
        ...(kind === 'missing' ? {} : { translated: preview(translated, path, call.rawKey) }),
      })),
      moreDifferences: Math.max(0, differences.length - DIFFERENCES_PER_EXAMPLE),
    });
    this.examples.set(call.companyId, examples.slice(0, EXAMPLES_PER_COMPANY));
  }

  /** Counts and examples of these companies' legacy keys, routes with the most differences first. */
  report(companyIds: readonly string[]): ShadowReport {
    const totals = noCounts();
    const routes = new Map<string, { counts: Counts; differences: Map<string, { path: string; kind: DifferenceKind; count: number }> }>();
    for (const companyId of companyIds) {
      for (const [route, tally] of this.tallies.get(companyId) ?? []) {
        const sum = routes.get(route) ?? { counts: noCounts(), differences: new Map() };
        for (const name of Object.keys(totals) as (keyof Counts)[]) {
          sum.counts[name] += tally.counts[name];
          totals[name] += tally.counts[name];
        }
        for (const [id, { path, kind, count }] of tally.differences) {
          const held = sum.differences.get(id) ?? { path, kind, count: 0 };
          held.count += count;
          sum.differences.set(id, held);
        }
        routes.set(route, sum);
      }
    }
    return {
      enabled: this.enabled,
      sampleRate: this.options.sampleRate,
      since: this.since,
      totals,
      routes: [...routes]
        .map(([route, { counts, differences }]) => ({ route, ...counts, differences: [...differences.values()].sort((a, b) => b.count - a.count || a.path.localeCompare(b.path)) }))
        .sort((a, b) => b.different - a.different || a.route.localeCompare(b.route)),
      examples: companyIds.flatMap((id) => this.examples.get(id) ?? []).sort((a, b) => b.at.localeCompare(a.at)),
    };
  }
}

/** What the shadow check reads: its settings, where it counts, the clock and where it reports failures. */
export type ShadowCheckDeps = Pick<MigrationDeps, 'config' | 'now' | 'logger'> & { metrics: { registry: Registry } };

const checks = new WeakMap<ShadowCheckDeps, ShadowCheck>();

/** The shadow check of a core: one per core, like its metrics registry, shared by the v2 routes and the report. */
export function shadowCheckOf(core: ShadowCheckDeps): ShadowCheck {
  let check = checks.get(core);
  if (!check) {
    const { legacyV2Upstream, shadowSampleRate, shadowTimeoutMs, shadowMaxInFlight } = core.config;
    check = new ShadowCheck(
      { upstream: legacyV2Upstream, sampleRate: shadowSampleRate, timeoutMs: shadowTimeoutMs, maxInFlight: shadowMaxInFlight },
      core.metrics.registry,
      core.now,
      (error) => core.logger.error({ err: error }, 'shadow check failed'),
    );
    checks.set(core, check);
  }
  return check;
}
