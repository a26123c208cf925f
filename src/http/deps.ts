import type { Registry } from 'prom-client';
import type { Authenticator } from '../access/authenticate.js';
import type { FirstUseRecorder } from '../access/first-use.js';
import type { DomainDeps } from '../domain/deps.js';
import type { SharedState } from '../shared-state/index.js';

export interface HttpMetrics {
  /** `route` is the route pattern (e.g. /v4/employees/:id), never the concrete URL; "unmatched" for 404s. */
  recordRequest(labels: { route: string; method: string; status: number }, seconds: number): void;
  /** A request refused by the rate limit `limit` (its rule name). */
  recordRateLimited(limit: string): void;
}

/**
 * What the HTTP frame and the REST surface use of the process's services. The composition root's
 * Core is one; the surfaces above extend it with what they add (OAuth, the v2 maps).
 */
export interface HttpDeps extends DomainDeps {
  auth: Authenticator;
  metrics: { registry: Registry; http: HttpMetrics };
  shared: SharedState;
  /** The v2 usage recorder (the gateway's): a write's transaction defers its records until it commits. */
  legacyUsage: { record(...args: never[]): void; flush(): Promise<void> };
  keyFirstUse: Pick<FirstUseRecorder, 'record' | 'settled'>;
}
