import { Counter, Gauge, type Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from '../kit/metric-series.js';
import { sunsetStatus, type SunsetSchedule } from '../legacy/sunset-status.js';

/*
 * Operator signals of the v2 → v4 gateway. Labels are bounded sets (routes of the maps, v2 scopes,
 * v4 capabilities, outcomes, surfaces): never a key or a company, whose cardinality would explode.
 */

export type LegacyKeySurface = 'rest' | 'mcp' | 'oauth';

export interface V2RequestLabels {
  /** The route as the maps declare it, e.g. "GET /employees/:id", never the concrete URL. */
  route: string;
  scope: string;
  /** The v4 capability the scope maps to, or "none" for scopes without a successor. */
  capability: string;
  /** e.g. ok, denied, invalid, gone, upstream_error. */
  outcome: string;
}

export interface GatewayMetrics {
  recordV2Request(labels: V2RequestLabels, seconds: number): void;
  recordUpstreamError(kind: string): void;
  recordLegacyKeyRejected(surface: LegacyKeySurface): void;
}

const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);

// A v2 list walks every v4 page, so the tail reaches seconds, unlike a single-record call.
const TRANSLATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The gateway's metrics, registered in the process's registry (src/app/metrics.ts). */
export function createGatewayMetrics(registry: Registry, schedule: SunsetSchedule, now: () => Date): GatewayMetrics {
  const registers = [registry];

  const requests = new SeriesCounter<keyof V2RequestLabels>(
    'svc_v2_requests_total',
    'v2 requests answered by the gateway, by route, v2 scope, v4 capability and outcome',
    ['route', 'scope', 'capability', 'outcome'],
    registry,
  );
  const translation = new SeriesHistogram<'route'>(
    'svc_v2_translation_seconds',
    'Time to answer a v2 request, translation and v4 calls included',
    ['route'],
    TRANSLATION_BUCKETS,
    registry,
  );
  const upstreamErrors = new Counter({
    name: 'svc_v2_upstream_errors_total',
    help: 'Failures reaching the v4 core or the legacy v2 upstream, by kind',
    labelNames: ['kind'] as const,
    registers,
  });
  const legacyKeyRejections = new Counter({
    name: 'svc_v4_legacy_key_rejections_total',
    help: 'Legacy v2 keys refused on a v4 surface (integrations still to migrate)',
    labelNames: ['surface'] as const,
    registers,
  });
  const sunsetGauge = new Gauge({
    name: 'svc_v2_sunset_timestamp_seconds',
    help: 'When v2 stops answering, as Unix seconds (from the maps\' sunset.yaml)',
    registers,
  });
  sunsetGauge.set(unixSeconds(schedule.sunset));
  // Computed at each scrape from the clock, so every instance reports the same value and max/min aggregate.
  new Gauge({
    name: 'svc_v2_brownout_active',
    help: '1 while v2 is in a scheduled brownout window and answers 410 Gone, else 0 (from the maps\' sunset.yaml)',
    registers,
    collect() {
      this.set(sunsetStatus(schedule, now()).brownouts.active ? 1 : 0);
    },
  });
  // Labelled by the window (start/end, ISO 8601) so that it is absent, not 0, once none is left.
  new Gauge({
    name: 'svc_v2_next_brownout_start_timestamp_seconds',
    help: 'When the next scheduled v2 brownout starts, as Unix seconds, labelled by its window; absent once none is left',
    labelNames: ['window'] as const,
    registers,
    collect() {
      this.reset();
      const next = sunsetStatus(schedule, now()).brownouts.next;
      if (next) this.set({ window: `${next.start}/${next.end}` }, unixSeconds(new Date(next.start)));
    },
  });

  return {
    recordV2Request(labels, seconds) {
      const { route, scope, capability, outcome } = labels;
      requests.inc(`${outcome} ${capability} ${scope} ${route}`, () => ({ route, scope, capability, outcome }));
      translation.observe(route, () => ({ route }), seconds);
    },
    recordUpstreamError(kind) {
      upstreamErrors.inc({ kind });
    },
    recordLegacyKeyRejected(surface) {
      legacyKeyRejections.inc({ surface });
    },
  };
}
