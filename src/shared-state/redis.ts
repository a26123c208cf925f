import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { MemorySharedState } from './memory.js';
import { SharedStateUnavailable, type RateLimitResult, type SharedState, type SharedStateStatus } from './shared-state.js';

export interface RedisStateOptions {
  url: string;
  keyPrefix: string;
  logger: Logger;
  registry: Registry;
}

// A command waits at most this long: an unanswering Redis must not hold requests (or sign-ins) hostage.
const COMMAND_TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 2000;
// Reconnects forever, backing off to 2 s: recovery needs no restart.
const reconnectDelay = (attempt: number) => Math.min(attempt * 200, 2000);

/*
 * One fixed window per key, created with its expiry by the first hit, counted atomically. A key
 * left without expiry (a crash between the calls cannot happen in a script, but an operator's
 * PERSIST can) is given one again, so a bucket never stays closed for good.
 */
const RATE_LIMIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}`;

/** Commands the shared state sends that not every Redis has: GETEX came with Redis 6.2. */
const NEEDED_COMMANDS = ['GETEX'] as const;
const NOT_CHECKED = 'not connected';

/** Redis answered with an error: a bug of ours (wrong type, bad script), not an outage. */
const isReplyError = (error: unknown) => error instanceof Error && error.name === 'ReplyError';

export class RedisSharedState implements SharedState {
  readonly kind = 'redis' as const;
  // Unknown until the first connect settles, so that a Redis down at start is logged too.
  private current: SharedStateStatus | 'starting' = 'starting';
  private closing = false;
  // Why commands are not sent, if they are not: no connection whose server was checked to have every
  // command we send (checkCommands), or the reason the connected one fails that check (it then counts as down).
  private refusal: string | undefined = NOT_CHECKED;
  private commandCheck: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<(status: SharedStateStatus) => void>();
  private readonly fallback = new MemorySharedState();
  private readonly logger: Logger;
  private readonly up: Gauge;

  private constructor(
    private readonly redis: Redis,
    options: RedisStateOptions,
  ) {
    this.logger = options.logger.child({ component: 'shared-state' });
    this.up = new Gauge({
      name: 'svc_redis_up',
      help: 'Whether the Redis shared state answers (1) or not (0); rate limits are per process while 0',
      registers: [options.registry],
    });
    this.up.set(0);
    redis.on('ready', () => {
      this.commandCheck = this.checkCommands();
    });
    redis.on('close', () => {
      this.refusal = NOT_CHECKED;
      this.setStatus('down', 'connection closed');
    });
    // Without a listener an 'error' event would crash the process; the status change is what gets logged.
    redis.on('error', (error: Error) => this.logger.debug({ err: error }, 'Redis connection error'));
  }

  /**
   * Connects, waiting at most the connect timeout and then the command check's (one command timeout):
   * a Redis down at start, or too old, leaves the service up, in degraded mode.
   */
  static async open(options: RedisStateOptions): Promise<RedisSharedState> {
    const redis = new Redis(options.url, {
      keyPrefix: options.keyPrefix,
      lazyConnect: true,
      // Fail at once while disconnected rather than queue: a queued command would hang its request.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: reconnectDelay,
    });
    const state = new RedisSharedState(redis, options);
    await redis.connect().then(
      () => state.commandCheck,
      (error: Error) => state.setStatus('down', error.message),
    );
    return state;
  }

  get status(): SharedStateStatus {
    return this.current === 'up' ? 'up' : 'down';
  }

  onStatusChange(listener: (status: SharedStateStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async rateLimit(bucket: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
    try {
      const [count, ttlMs] = (await this.command(() =>
        this.redis.eval(RATE_LIMIT_SCRIPT, 1, `rl:${bucket}`, String(windowSeconds * 1000)),
      )) as [number, number];
      const allowed = count <= limit;
      return {
        allowed,
        retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(ttlMs / 1000)),
        remaining: Math.max(0, limit - count),
      };
    } catch (error) {
      if (!(error instanceof SharedStateUnavailable)) throw error;
      // Per process while Redis is down: N instances allow up to N × limit, never unlimited.
      return this.fallback.rateLimit(bucket, limit, windowSeconds);
    }
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.command(() => this.redis.get(`kv:${key}`))) ?? undefined;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.command(() => this.redis.set(`kv:${key}`, value, 'EX', ttlSeconds));
  }

  async claim(key: string, ttlSeconds: number): Promise<boolean> {
    return (await this.command(() => this.redis.set(`kv:${key}`, '1', 'EX', ttlSeconds, 'NX'))) === 'OK';
  }

  async getAndTouch(key: string, ttlSeconds: number): Promise<string | undefined> {
    return (await this.command(() => this.redis.getex(`kv:${key}`, 'EX', ttlSeconds))) ?? undefined;
  }

  async delete(key: string): Promise<void> {
    await this.command(() => this.redis.del(`kv:${key}`));
  }

  async ping(): Promise<void> {
    await this.command(() => this.redis.ping());
  }

  async close(): Promise<void> {
    // A connection closed on purpose is no outage to report.
    this.closing = true;
    await this.fallback.close();
    this.listeners.clear();
    // QUIT lets pending replies arrive; a dead connection is simply dropped.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  /**
   * Asks each new connection's server whether it has every command we send. An older Redis would
   * otherwise fail each session call with "unknown command"; it is reported down instead, with the
   * reason, and is checked again on the next connection (an upgrade needs no restart of ours).
   */
  private async checkCommands(): Promise<void> {
    let missing: string[];
    try {
      const known = await this.redis.command('INFO', ...NEEDED_COMMANDS);
      missing = NEEDED_COMMANDS.filter((_, index) => !known[index]);
    } catch (error) {
      if (!isReplyError(error)) {
        // Unanswered (a timeout): reconnect, so that the next connection is checked in turn.
        if (this.redis.status === 'ready') this.redis.disconnect(true);
        return;
      }
      // A server that refuses the question (ACLs, a proxy) still gets used; a missing command would show then.
      this.logger.warn({ err: error }, 'Redis did not say which commands it has; assuming Redis 6.2 or newer');
      missing = [];
    }
    this.refusal = missing.length ? `Redis lacks ${missing.join(', ')}: the shared state needs Redis 6.2 or newer` : undefined;
    // Already down (reconnected after a close): the reason is still worth its line.
    if (this.refusal && this.current === 'down') this.logDown(this.refusal);
    this.setStatus(this.refusal ? 'down' : 'up', this.refusal ?? 'connected');
  }

  /** Runs one command; an outage (closed, timed out, not connected, too old) becomes SharedStateUnavailable. */
  private async command<T>(run: () => Promise<T>): Promise<T> {
    if (this.refusal) throw new SharedStateUnavailable(this.refusal);
    try {
      const result = await run();
      if (this.redis.status === 'ready') this.setStatus('up', 'answered');
      return result;
    } catch (error) {
      if (isReplyError(error)) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      this.setStatus('down', reason);
      throw new SharedStateUnavailable(reason);
    }
  }

  private logDown(reason: string): void {
    this.logger.error({ redis: 'down', reason }, 'Redis shared state down: rate limits per process, sessions unavailable');
  }

  private setStatus(next: SharedStateStatus, reason: string): void {
    if (next === this.current || this.closing) return;
    this.current = next;
    this.up.set(next === 'up' ? 1 : 0);
    if (next === 'up') this.logger.info({ redis: 'up', reason }, 'Redis shared state up: rate limits and sessions shared again');
    else this.logDown(reason);
    for (const listener of this.listeners) listener(next);
  }
}
