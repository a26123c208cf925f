import { createHash } from 'node:crypto';

/** Runs of one text before it is prepared: a statement run once or twice is not worth a name. */
const RUNS_BEFORE_NAMING = 3;
/** Texts tracked at most; beyond, new texts run unnamed (SQL built from many fragments cannot fill the connections). */
const MAX_TEXTS = 1000;

// 0A000 with this text: a prepared plan whose result columns a migration changed. 26000: a name the
// connection no longer holds. Both fail before the statement runs, so running it again is safe.
const STALE_PLAN = /cached plan must not change result type/;
const UNKNOWN_STATEMENT = '26000';

/**
 * A named statement as node-postgres takes it, its values passed beside it. The name and text are
 * inherited: node-postgres copies a query config's own properties, descriptors and all, on every
 * query (2 µs, as much as the rest of the hot read's statement handling), and none are left to copy.
 */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

/**
 * Which statement texts PostgreSQL keeps prepared on each connection, so a hot read is parsed and
 * planned once per connection instead of on every call. A text gets a name (derived from the text
 * and a generation) once it has run a few times; texts stay few because every value is a
 * parameter, and MAX_TEXTS bounds the rest. A schema change can invalidate the prepared plans
 * ("cached plan must not change result type"): a new generation then names every text anew, so
 * each connection prepares it again.
 */
export class StatementNames {
  private readonly runs = new Map<string, number | NamedStatement>();
  private generation = 0;
  private stopped = false;

  /** The text as a named statement, once it has earned a name; undefined runs it unnamed. */
  namedFor(text: string): NamedStatement | undefined {
    if (this.stopped) return undefined;
    const seen = this.runs.get(text);
    if (typeof seen === 'object') return seen;
    if (seen === undefined && this.runs.size >= MAX_TEXTS) return undefined;
    const count = (seen ?? 0) + 1;
    if (count < RUNS_BEFORE_NAMING) {
      this.runs.set(text, count);
      return undefined;
    }
    const name = `s${this.generation}_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    const named: NamedStatement = Object.create(Object.freeze({ name, text })) as NamedStatement;
    this.runs.set(text, named);
    return named;
  }

  /** What a failed named statement says: `stale` plans are prepared anew; a `lost` name ends naming. */
  failed(error: unknown): 'stale' | 'lost' | undefined {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (code === '0A000' && typeof message === 'string' && STALE_PLAN.test(message)) {
      this.generation++;
      this.runs.clear();
      return 'stale';
    }
    if (code === UNKNOWN_STATEMENT) {
      // The connection dropped a name it was given: something between us and PostgreSQL (a pooler
      // in transaction mode) does not keep session state, so no name would last.
      this.stopped = true;
      return 'lost';
    }
    return undefined;
  }
}
