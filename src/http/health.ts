import type { HttpDeps } from './deps.js';
import { sql } from '../store/sql.js';

export type CheckState = 'up' | 'down' | 'not_configured';

/**
 * ready: every configured check up. degraded: serving, with less (see `degraded`); a balancer keeps the instance,
 * since every instance shares the Redis, and draining them all would stop what needs no Redis.
 * not_ready: the database is down, without which nothing is served.
 */
export type ReadinessStatus = 'ready' | 'degraded' | 'not_ready';

export interface Readiness {
  status: ReadinessStatus;
  checks: { database: CheckState; redis: CheckState };
  /** What works less, by the check that is down, while degraded. */
  degraded: Array<{ check: 'redis'; reason: string }>;
}

const REDIS_DOWN = {
  check: 'redis',
  reason: 'Redis down: MCP sessions answer 503 shared_state_unavailable, rate limits count per process; REST, v2, OAuth and the pages serve',
} as const;

// A load balancer polls this: a hung database must turn it "not ready", not hang it.
const CHECK_TIMEOUT_MS = 2000;

async function answersInTime(check: () => Promise<unknown>): Promise<CheckState> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'up';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** Whether this instance can serve: the database answers; Redis, when configured, decides only whether fully. */
export async function readiness(core: Pick<HttpDeps, 'db' | 'shared'>): Promise<Readiness> {
  const [database, redis] = await Promise.all([
    answersInTime(() => core.db.query(sql`SELECT 1`)),
    core.shared.kind === 'redis' ? answersInTime(() => core.shared.ping()) : Promise.resolve<CheckState>('not_configured'),
  ]);
  const degraded = redis === 'down' ? [REDIS_DOWN] : [];
  const status = database === 'down' ? 'not_ready' : degraded.length > 0 ? 'degraded' : 'ready';
  return { status, checks: { database, redis }, degraded };
}
