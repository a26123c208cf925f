import type { Core } from '../core.js';
import { sql } from '../store/sql.js';

export type CheckState = 'up' | 'down' | 'not_configured';

export interface Readiness {
  ready: boolean;
  checks: { database: CheckState; redis: CheckState };
}

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

/** Whether this instance can serve: the database answers and, when configured, Redis does. */
export async function readiness(core: Core): Promise<Readiness> {
  const [database, redis] = await Promise.all([
    answersInTime(() => core.db.query(sql`SELECT 1`)),
    core.shared.kind === 'redis' ? answersInTime(() => core.shared.ping()) : Promise.resolve<CheckState>('not_configured'),
  ]);
  return { ready: database !== 'down' && redis !== 'down', checks: { database, redis } };
}
