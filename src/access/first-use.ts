import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

/** Keys remembered per process before the memory starts over (a repeat write is harmless). */
const REMEMBERED_KEYS = 10_000;

/**
 * Records each API key's first successful v4 call, once: the cutover observes a successor key
 * working from it. A process remembers the keys it has written, so a key costs one conditional
 * UPDATE per process, never one per request; the write is off the request path.
 */
export class FirstUseRecorder {
  private readonly written = new Set<string>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly db: Queryable,
    private readonly now: () => Date,
    private readonly onError: (error: unknown) => void,
  ) {}

  record(keyId: string): void {
    if (this.written.has(keyId)) return;
    if (this.written.size >= REMEMBERED_KEYS) this.written.clear();
    this.written.add(keyId);
    const write = this.db
      .query(sql`UPDATE api_keys SET first_used_at = ${this.now().toISOString()} WHERE id = ${keyId} AND first_used_at IS NULL`)
      .then(
        () => undefined,
        (error: unknown) => {
          // Tried again on the key's next call.
          this.written.delete(keyId);
          this.onError(error);
        },
      )
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  /** Resolves once the writes under way are done, so this instance reads its own calls. */
  async settled(): Promise<void> {
    await Promise.all(this.pending);
  }
}
