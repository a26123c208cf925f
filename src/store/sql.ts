/**
 * How PostgreSQL plans a statement that it keeps prepared, as its `plan_cache_mode` names it:
 * - 'auto': PostgreSQL's choice, a plan with the call's values for five runs, then the cached generic
 *   plan unless that one looks dearer;
 * - 'custom': planned with its values on every call, for a statement whose best plan depends on a
 *   value (a search pattern matching ten rows or ten thousand);
 * - 'generic': planned once per connection, for a statement with one best plan whatever its values,
 *   which PostgreSQL's cost guess would still replan every call (see paginate).
 */
export type Planning = 'auto' | 'custom' | 'generic';

/** A statement holding fragments of several plannings takes the highest ranked: a search inside is planned per call. */
const PLANNING_RANK: Record<Planning, number> = { auto: 0, generic: 1, custom: 2 };

/**
 * A composable SQL fragment: interpolated values become $n parameters, nested fragments are inlined.
 * Keeps every query parameterised while letting scope predicates be built in one place.
 */
export class Sql {
  readonly planning: Planning;
  /** Whether any parameter is inside: collecting the values skips the fragments without (column lists, joins). */
  private readonly hasParameters: boolean;

  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
    planning: Planning = 'auto',
  ) {
    let hasParameters = false;
    for (const value of values) {
      if (!(value instanceof Sql)) hasParameters = true;
      else {
        if (PLANNING_RANK[value.planning] > PLANNING_RANK[planning]) planning = value.planning;
        hasParameters ||= value.hasParameters;
      }
    }
    this.planning = planning;
    this.hasParameters = hasParameters;
  }

  /** The same statement, planned as `planning` says (unless a fragment inside asks for 'custom'). */
  planned(planning: Planning): Sql {
    return new Sql(this.strings, this.values, planning);
  }

  /**
   * The text and parameters. A statement shaped as the last one built from the same template (its
   * literal strings) gets that one's text, the very same string: the statement namer's lookup and
   * node-postgres's check of a prepared text then compare references instead of hashing the text.
   */
  toQuery(): { text: string; values: unknown[] } {
    const values: unknown[] = [];
    const last = lastRendered.get(this.strings);
    if (last !== undefined && sameShape(this, last.statement)) {
      this.collectValues(values);
      return { text: last.text, values };
    }
    const text = this.render(values);
    // Template literals' strings are frozen and live as long as their code: the rest are built per call.
    if (Object.isFrozen(this.strings)) lastRendered.set(this.strings, { statement: this, text });
    return { text, values };
  }

  private collectValues(values: unknown[]): void {
    if (!this.hasParameters) return;
    for (const value of this.values) {
      if (value instanceof Sql) value.collectValues(values);
      else values.push(value);
    }
  }

  private render(values: unknown[]): string {
    let text = this.strings[0] ?? '';
    for (let i = 0; i < this.values.length; i++) {
      const value = this.values[i];
      if (value instanceof Sql) {
        text += value.render(values);
      } else {
        values.push(value);
        text += `$${values.length}`;
      }
      text += this.strings[i + 1] ?? '';
    }
    return text;
  }
}

const lastRendered = new WeakMap<readonly string[], { statement: Sql; text: string }>();

/** Whether two fragments render the same text: the same strings, and fragments (or parameters) in the same places. */
function sameShape(a: Sql, b: Sql): boolean {
  if (a === b) return true;
  if (a.strings !== b.strings) {
    if (a.strings.length !== b.strings.length) return false;
    for (let i = 0; i < a.strings.length; i++) if (a.strings[i] !== b.strings[i]) return false;
  }
  for (let i = 0; i < a.values.length; i++) {
    const x = a.values[i];
    const y = b.values[i];
    if (x instanceof Sql ? !(y instanceof Sql && sameShape(x, y)) : y instanceof Sql) return false;
  }
  return true;
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return new Sql(strings, values);
}

/** Trusted SQL text (identifiers from allowlists, never user input). */
export function raw(text: string): Sql {
  return new Sql([text], []);
}

export function join(parts: readonly Sql[], separator: string): Sql {
  if (parts.length === 0) return raw('');
  const strings = [''];
  for (let i = 1; i < parts.length; i++) strings.push(separator);
  strings.push('');
  return new Sql(strings, parts);
}

/** AND of the given predicates; TRUE when there are none. */
export function and(parts: readonly Sql[]): Sql {
  return parts.length === 0 ? raw('TRUE') : sql`(${join(parts, ' AND ')})`;
}

/**
 * Case-insensitive substring match of `text` in any of `columns`; LIKE wildcards in `text` match
 * literally. On lower(column), which the trigram indexes of migration 0012 cover. LIKE on both sides
 * lowered is what ILIKE does in a UTF-8 database, without lowering the column a second time. Planned
 * per call: a cached generic plan cannot know whether the pattern is rare or common.
 */
export function containsText(text: string, columns: readonly Sql[]): Sql {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const match = join(
    columns.map((column) => sql`lower(${column}) LIKE lower(${pattern})`),
    ' OR ',
  );
  return new Sql(['(', ')'], [match], 'custom');
}
