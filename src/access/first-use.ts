import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import type { Capability } from './capabilities.js';

/** Keys remembered per process before the memory starts over (a repeat write is harmless). */
const REMEMBERED_KEYS = 10_000;

/**
 * Records each API key's first successful v4 call, and the first success with each capability it
 * exercised, once: the cutover observes a successor key working from them. A process remembers what
 * it has written, so a key costs one write per capability per process, never one per request (on the
 * request path: two lookups, no allocation); the write is off the request path.
 */
export class FirstUseRecorder {
  /** Per key, the capabilities written (null: the first call itself). */
  private readonly written = new Map<string, Set<Capability | null>>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly db: Queryable,
    private readonly now: () => Date,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A successful call of the key, with the capability it needed (null for one that needs none, such as whoami). */
  record(keyId: string, capability: Capability | null): void {
    let uses = this.written.get(keyId);
    if (uses?.has(capability)) return;
    if (!uses) {
      if (this.written.size >= REMEMBERED_KEYS) this.written.clear();
      uses = new Set();
      this.written.set(keyId, uses);
    }
    uses.add(capability);
    const at = this.now().toISOString();
    const firstCall = sql`UPDATE api_keys SET first_used_at = ${at} WHERE id = ${keyId} AND first_used_at IS NULL`;
    const write = this.db
      .query(
        capability === null
          ? firstCall
          : sql`WITH first_call AS (${firstCall})
              INSERT INTO api_key_capability_uses (key_id, capability, first_used_at) VALUES (${keyId}, ${capability}, ${at})
              ON CONFLICT (key_id, capability) DO NOTHING`,
      )
      .then(
        () => undefined,
        (error: unknown) => {
          // Tried again on the key's next call.
          this.written.get(keyId)?.delete(capability);
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
