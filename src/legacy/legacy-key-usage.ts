import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

const DAY_MS = 24 * 60 * 60 * 1000;

interface PendingUsage {
  keyId: string;
  day: string;
  endpoint: string;
  scope: string;
  calls: number;
}

/**
 * Counts v2 calls per key, day (UTC) and endpoint in memory and adds them to the database in one
 * statement per flush, off the request path. Counts are additive, so instances flush independently;
 * a failed flush keeps its counts for the next one. A crash loses at most one interval's counts.
 */
export class UsageRecorder {
  private pending = new Map<string, PendingUsage>();
  /** Last use per key, in Unix milliseconds. */
  private lastUsed = new Map<string, number>();
  /** The UTC day last counted in, formatted once a day rather than once a call. */
  private day = { start: 0, text: '1970-01-01' };
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Queryable,
    private readonly onFlushError: (error: unknown) => void,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs).unref();
  }

  record(keyId: string, endpoint: string, scope: string, now: Date): void {
    const at = now.getTime();
    this.add({ keyId, day: this.dayOf(at), endpoint, scope, calls: 1 }, at);
  }

  private dayOf(at: number): string {
    if (at < this.day.start || at >= this.day.start + DAY_MS) {
      const start = at - (at % DAY_MS);
      this.day = { start, text: new Date(start).toISOString().slice(0, 10) };
    }
    return this.day.text;
  }

  private add(usage: PendingUsage, at: number): void {
    const id = `${usage.keyId} ${usage.day} ${usage.endpoint}`;
    const entry = this.pending.get(id);
    if (entry) {
      entry.calls += usage.calls;
      entry.scope = usage.scope;
    } else {
      this.pending.set(id, { ...usage });
    }
    if ((this.lastUsed.get(usage.keyId) ?? -Infinity) < at) this.lastUsed.set(usage.keyId, at);
  }

  /** Writes what was counted so far; flushes never overlap, so none double-counts. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const entries = [...this.pending.values()];
    const lastUsed = [...this.lastUsed.entries()];
    this.pending = new Map();
    this.lastUsed = new Map();
    try {
      // Usage of a key deleted meanwhile is dropped with it.
      await this.db.query(sql`
        WITH touched AS (
          UPDATE legacy_keys l SET last_used_at = GREATEST(l.last_used_at, u.at)
          FROM unnest(${lastUsed.map(([id]) => id)}::text[], ${lastUsed.map(([, at]) => new Date(at).toISOString())}::timestamptz[]) AS u(id, at)
          WHERE l.id = u.id RETURNING l.id
        )
        INSERT INTO legacy_key_usage (legacy_key_id, day, endpoint, scope, calls)
        SELECT u.id, u.day, u.endpoint, u.scope, u.calls
        FROM unnest(${entries.map((e) => e.keyId)}::text[], ${entries.map((e) => e.day)}::date[], ${entries.map((e) => e.endpoint)}::text[],
          ${entries.map((e) => e.scope)}::text[], ${entries.map((e) => e.calls)}::int[]) AS u(id, day, endpoint, scope, calls)
        WHERE u.id IN (SELECT id FROM touched)
        ON CONFLICT (legacy_key_id, day, endpoint) DO UPDATE SET calls = legacy_key_usage.calls + EXCLUDED.calls, scope = EXCLUDED.scope`);
    } catch (error) {
      const lastUsedOf = new Map(lastUsed);
      for (const entry of entries) this.add(entry, lastUsedOf.get(entry.keyId)!);
      this.onFlushError(error);
    }
  }
}
