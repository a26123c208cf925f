import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Sunset } from './mappings.js';

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
  /** The maps may be loaded after the metrics exist; the gauge follows them. */
  setSunset(sunset: Sunset): void;
}

export interface HttpMetrics {
  /** `route` is the route pattern (e.g. /v4/employees/:id), never the concrete URL; "unmatched" for 404s. */
  recordRequest(labels: { route: string; method: string; status: number }, seconds: number): void;
  /** A request refused by the rate limit `limit` (its rule name). */
  recordRateLimited(limit: string): void;
}

export interface Metrics {
  registry: Registry;
  gateway: GatewayMetrics;
  http: HttpMetrics;
}

// A v2 list walks every v4 page, so the tail reaches seconds, unlike a single-record call.
const TRANSLATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One registry per core, so several cores in one process (tests) never share counters. */
export function createMetrics(sunset?: Sunset): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const requests = new Counter({
    name: 'svc_v2_requests_total',
    help: 'v2 requests answered by the gateway, by route, v2 scope, v4 capability and outcome',
    labelNames: ['route', 'scope', 'capability', 'outcome'] as const,
    registers,
  });
  const translation = new Histogram({
    name: 'svc_v2_translation_seconds',
    help: 'Time to answer a v2 request, translation and v4 calls included',
    labelNames: ['route'] as const,
    buckets: TRANSLATION_BUCKETS,
    registers,
  });
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

  const gateway: GatewayMetrics = {
    recordV2Request(labels, seconds) {
      requests.inc(labels);
      translation.observe({ route: labels.route }, seconds);
    },
    recordUpstreamError(kind) {
      upstreamErrors.inc({ kind });
    },
    recordLegacyKeyRejected(surface) {
      legacyKeyRejections.inc({ surface });
    },
    setSunset(next) {
      sunsetGauge.set(Math.floor(next.sunset.getTime() / 1000));
    },
  };
  if (sunset) gateway.setSunset(sunset);

  const httpDuration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const rateLimited = new Counter({
    name: 'svc_rate_limited_total',
    help: 'Requests refused with 429 by a rate limit, by limit name',
    labelNames: ['limit'] as const,
    registers,
  });
  const http: HttpMetrics = {
    recordRequest({ route, method, status }, seconds) {
      httpDuration.observe({ route, method, status: String(status) }, seconds);
    },
    recordRateLimited(limit) {
      rateLimited.inc({ limit });
    },
  };
  return { registry, gateway, http };
}
