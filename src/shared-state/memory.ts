import type { RateLimitResult, SharedState, SharedStateStatus } from './shared-state.js';

interface Window {
  count: number;
  resetAt: number;
}

interface Entry {
  value: string;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 30_000;

/** Fixed window starting at the bucket's first hit, as the Redis script counts. */
function countHit(windows: Map<string, Window>, now: number, bucket: string, limit: number, windowSeconds: number): RateLimitResult {
  let window = windows.get(bucket);
  if (!window || window.resetAt <= now) {
    window = { count: 0, resetAt: now + windowSeconds * 1000 };
    windows.set(bucket, window);
  }
  window.count += 1;
  const allowed = window.count <= limit;
  return {
    allowed,
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((window.resetAt - now) / 1000)),
    remaining: Math.max(0, limit - window.count),
  };
}

/**
 * One process, one truth: the default when REDIS_URL is unset, and the Redis store's rate-limit
 * fallback, so that a Redis outage never makes a limit disappear.
 */
export class MemorySharedState implements SharedState {
  readonly kind = 'memory' as const;
  readonly status: SharedStateStatus = 'up';
  private readonly windows = new Map<string, Window>();
  private readonly entries = new Map<string, Entry>();
  // Expired entries are dropped on read too; the sweep bounds memory for keys never read again.
  private readonly sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS).unref();

  constructor(private readonly clock: () => number = Date.now) {}

  onStatusChange(): () => void {
    return () => undefined;
  }

  async rateLimit(bucket: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
    return countHit(this.windows, this.clock(), bucket, limit, windowSeconds);
  }

  async get(key: string): Promise<string | undefined> {
    return this.live(key)?.value;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    this.entries.set(key, { value, expiresAt: this.clock() + ttlSeconds * 1000 });
  }

  async claim(key: string, ttlSeconds: number): Promise<boolean> {
    if (this.live(key)) return false;
    await this.set(key, '1', ttlSeconds);
    return true;
  }

  async getAndTouch(key: string, ttlSeconds: number): Promise<string | undefined> {
    const entry = this.live(key);
    if (entry) entry.expiresAt = this.clock() + ttlSeconds * 1000;
    return entry?.value;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.clock();
    for (const [bucket, window] of this.windows) if (window.resetAt <= now) this.windows.delete(bucket);
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}
