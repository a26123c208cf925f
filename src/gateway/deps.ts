import type { Registry } from 'prom-client';
import type { DomainDeps } from '../domain/deps.js';
import type { HttpDeps, HttpMetrics } from '../http/deps.js';
import type { LegacyReadDeps } from '../legacy/legacy-keys.js';
import type { IssuerAt } from '../oauth/addresses.js';
import type { ChangeFeed } from '../store/change-feed.js';
import type { GatewayMetrics } from './metrics.js';

/**
 * What the v2 gateway reads, in either deployment: the legacy keys (their bridge keys opened with the
 * sealing keys), the maps, the shadow check's settings, the HTTP frame's health and metrics, the change
 * feed its caches follow, and the issuer a refused MCP call is pointed to. No mailer, OAuth server or
 * authenticator: the separate gateway process builds this much and no more (app/gateway-core.ts).
 */
export type GatewayDeps = Pick<DomainDeps, 'config' | 'db' | 'logger' | 'now' | 'secretKey' | 'previousSecretKey'> &
  Pick<LegacyReadDeps, 'mappings' | 'legacyUsage'> &
  Pick<HttpDeps, 'shared'> & {
    metrics: { registry: Registry; http: HttpMetrics; gateway: GatewayMetrics };
    changes: ChangeFeed;
    oauth: IssuerAt;
  };
