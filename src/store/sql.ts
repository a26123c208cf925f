/**
 * A composable SQL fragment: interpolated values become $n parameters, nested fragments are inlined.
 * Keeps every query parameterised while letting scope predicates be built in one place.
 */
export class Sql {
  /**
   * Whether the statement's best plan depends on a value (a search pattern matching ten rows or ten
   * thousand): such a statement is planned with its values on every call, never from a cached plan.
   */
  readonly plannedPerCall: boolean;

  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
    plannedPerCall = false,
  ) {
    this.plannedPerCall = plannedPerCall || values.some((value) => value instanceof Sql && value.plannedPerCall);
  }

  toQuery(): { text: string; values: unknown[] } {
    const values: unknown[] = [];
    const text = this.render(values);
    return { text, values };
  }

  private render(values: unknown[]): string {
    let text = this.strings[0] ?? '';
    this.values.forEach((value, i) => {
      if (value instanceof Sql) {
        text += value.render(values);
      } else {
        values.push(value);
        text += `$${values.length}`;
      }
      text += this.strings[i + 1] ?? '';
    });
    return text;
  }
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
  return new Sql(['(', ')'], [match], true);
}
