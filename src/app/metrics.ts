import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { SeriesHistogram } from '../kit/metric-series.js';
import { createGatewayMetrics, type GatewayMetrics } from '../gateway/metrics.js';
import type { SunsetSchedule } from '../legacy/sunset-status.js';
import type { HttpMetrics } from '../http/deps.js';

/*
 * The process's Prometheus registry, served at /metrics: Node's own metrics, the HTTP layer's, and
 * the gateway's (src/gateway/metrics.ts). The MCP endpoint registers its tool counter here too.
 */

export interface Metrics {
  registry: Registry;
  gateway: GatewayMetrics;
  http: HttpMetrics;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One registry per core, so several cores in one process (tests) never share counters. */
export function createMetrics(schedule: SunsetSchedule, now: () => Date): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const httpDuration = new SeriesHistogram<'route' | 'method' | 'status'>(
    'svc_http_request_duration_seconds',
    'HTTP requests answered, by route pattern, method and status',
    ['route', 'method', 'status'],
    HTTP_BUCKETS,
    registry,
  );
  const rateLimited = new Counter({
    name: 'svc_rate_limited_total',
    help: 'Requests refused with 429 by a rate limit, by limit name',
    labelNames: ['limit'] as const,
    registers,
  });
  const http: HttpMetrics = {
    recordRequest({ route, method, status }, seconds) {
      httpDuration.observe(`${method} ${status} ${route}`, () => ({ route, method, status: String(status) }), seconds);
    },
    recordRateLimited(limit) {
      rateLimited.inc({ limit });
    },
  };
  return { registry, gateway: createGatewayMetrics(registry, schedule, now), http };
}
