import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../kit/config.js';
import { MemorySharedState } from './memory.js';
import { RedisSharedState } from './redis.js';
import type { SharedState } from './shared-state.js';

export { SharedStateUnavailable, type RateLimitResult, type SharedState, type SharedStateStatus } from './shared-state.js';

/**
 * Redis when REDIS_URL is set (several instances), this process otherwise; the in-process store
 * expires entries on `clock` (the core's, which tests move).
 */
export async function openSharedState(
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>,
  logger: Logger,
  registry: Registry,
  clock: () => number = Date.now,
): Promise<SharedState> {
  if (!config.redisUrl) return new MemorySharedState(clock);
  return RedisSharedState.open({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, logger, registry });
}
