import { ServiceUnavailable } from '../kit/errors.js';

/*
 * State that every instance of the service must see alike: rate-limit counters and short-lived
 * records (MCP sessions). Served by Redis when REDIS_URL is set, in this process otherwise.
 * Cache invalidation (revocations, disabled users, narrowed keys) is NOT here: PostgreSQL
 * NOTIFY carries it (src/store/change-feed.ts), so it is exactly as available as the data itself.
 */

export type SharedStateStatus = 'up' | 'down';

export interface RateLimitResult {
  allowed: boolean;
  /** Seconds until the window resets when refused; 0 when allowed. */
  retryAfterSeconds: number;
  /** Hits left in the current window. */
  remaining: number;
}

export interface SharedState {
  readonly kind: 'memory' | 'redis';
  /** Last known health: `down` from a failed command or a lost connection until the next success. */
  readonly status: SharedStateStatus;
  /** Called on every change of `status`; returns the unsubscribe function. */
  onStatusChange(listener: (status: SharedStateStatus) => void): () => void;
  /**
   * Counts one hit of `bucket` in a fixed window of `windowSeconds` that starts at the bucket's
   * first hit; at most `limit` hits are allowed per window. Never fails: with Redis down the
   * count falls back to this process (still limited, never unlimited).
   */
  rateLimit(bucket: string, limit: number, windowSeconds: number): Promise<RateLimitResult>;
  /** The value of `key`, or undefined when absent or expired. Throws SharedStateUnavailable. */
  get(key: string): Promise<string | undefined>;
  /** Stores `value` under `key` for `ttlSeconds`. Throws SharedStateUnavailable. */
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** Stores `key` for `ttlSeconds` unless it exists: true for the one caller that created it. Throws SharedStateUnavailable. */
  claim(key: string, ttlSeconds: number): Promise<boolean>;
  /**
   * The value of `key`, its life extended to `ttlSeconds` from now in the same step (Redis GETEX);
   * undefined when absent or expired, which stays so. Throws SharedStateUnavailable.
   */
  getAndTouch(key: string, ttlSeconds: number): Promise<string | undefined>;
  /** Throws SharedStateUnavailable. */
  delete(key: string): Promise<void>;
  /** Resolves when the store answers (readiness); throws SharedStateUnavailable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Seconds a client should wait before retrying while Redis reconnects (its back-off tops at 2 s). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The shared store cannot answer; HTTP callers answer 503 with Retry-After: retryAfterSeconds. */
export class SharedStateUnavailable extends ServiceUnavailable {
  constructor(reason: string) {
    super('shared_state_unavailable', `The shared state store (Redis) is unavailable: ${reason}. Retry shortly`, UNAVAILABLE_RETRY_AFTER_SECONDS);
    this.name = 'SharedStateUnavailable';
  }
}
