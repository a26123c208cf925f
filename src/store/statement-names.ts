import { createHash } from 'node:crypto';

/** Runs of one text before it is prepared: a statement run once or twice is not worth a name. */
const RUNS_BEFORE_NAMING = 3;
/** Texts tracked at most; beyond, new texts run unnamed (SQL built from many fragments cannot fill the connections). */
const MAX_TEXTS = 1000;

/**
 * Which statement texts PostgreSQL keeps prepared on each connection, so a hot read is parsed and
 * planned once per connection instead of on every call. A text gets a name (derived from the text
 * and a generation) once it has run a few times; texts stay few because every value is a
 * parameter, and MAX_TEXTS bounds the rest. A schema change can invalidate the prepared plans
 * ("cached plan must not change result type"): `renew` starts a new generation, so every
 * connection prepares each text again under a new name.
 */
export class StatementNames {
  private readonly runs = new Map<string, number | string>();
  private generation = 0;

  nameFor(text: string): string | undefined {
    const seen = this.runs.get(text);
    if (typeof seen === 'string') return seen;
    if (seen === undefined && this.runs.size >= MAX_TEXTS) return undefined;
    const count = (seen ?? 0) + 1;
    if (count < RUNS_BEFORE_NAMING) {
      this.runs.set(text, count);
      return undefined;
    }
    const name = `s${this.generation}_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    this.runs.set(text, name);
    return name;
  }

  renew(): void {
    this.generation++;
    this.runs.clear();
  }
}

// 0A000 with this text: a prepared plan whose result columns a migration changed. 26000: a name the
// connection no longer holds (a pooler that discards session state).
const STALE_PLAN = /cached plan must not change result type/;
const UNKNOWN_STATEMENT = '26000';

/** Whether a failed named statement would succeed prepared anew. */
export function isStalePreparedStatement(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === UNKNOWN_STATEMENT || (code === '0A000' && typeof message === 'string' && STALE_PLAN.test(message));
}
