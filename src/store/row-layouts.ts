import pg, { type FieldDef, type QueryResult } from 'pg';
import type { NamedStatement } from './statement-names.js';

/*
 * node-postgres builds the layout of a result's rows (each column's value parser, and the empty row
 * that every row is copied from) anew from each RowDescription: a lookup per column and the spread of
 * a null-prototype object, which V8 runs on a slow path (2.5-4 µs a query in a profile, 7-11 µs for
 * an employee's 20 columns in a loop on a busy machine; built per query, it costs the counted
 * single-employee read about a fifth of its instructions, more than that explains: the `instructions`
 * benchmark, bench/RESULTS.md). A named statement's rows are described alike on every run, so its last layout is
 * reused while PostgreSQL describes the columns the same way (names, types and formats); a column
 * changed by a migration gets a layout built anew. It sets node-postgres's private fields, so package.json
 * pins pg exactly and test/store/row-layouts.test.ts fails on another release (docs/decisions/0001-pg-row-layouts.md).
 */

/** The parts of node-postgres's Result that addFields sets and parseRow reads (not in its typings). */
interface ResultInternals {
  fields: FieldDef[];
  _parsers: unknown[] | undefined;
  _prebuiltEmptyResultObject: object | null;
  addFields(fields: FieldDef[]): void;
}

interface RowLayout {
  fields: FieldDef[];
  parsers: unknown[];
  emptyRow: object;
}

const sameColumns = (a: FieldDef[], b: FieldDef[]) =>
  a.length === b.length &&
  a.every((field, i) => {
    const other = b[i]!;
    return field.name === other.name && field.dataTypeID === other.dataTypeID && field.format === other.format;
  });

const buildLayout = pg.Result.prototype as unknown as ResultInternals;

/** Where queries are sent: a pool, which answers a submitted Query with a promise of its result. */
interface QueryTarget {
  query(query: pg.Query): unknown;
}

export class RowLayouts {
  // Keyed by the statement object: a new generation of names (StatementNames) drops the old layouts with it.
  private readonly byStatement = new WeakMap<NamedStatement, RowLayout>();

  /** Runs `statement` on `target`; its rows are laid out as on the statement's last run when the columns match. */
  run(target: QueryTarget, statement: NamedStatement, values: unknown[]): Promise<QueryResult> {
    const query = new pg.Query(statement, values);
    const result = (query as unknown as { _result?: ResultInternals })._result;
    // An own method on this query's result only: a second result, or another query, is left as node-postgres builds it.
    if (result) result.addFields = (fields) => this.addFields(statement, result, fields);
    // @types/pg types pool.query(submittable) as returning the submittable; pg-pool returns the result's promise,
    // handed on as it is (not awaited here: every prepared query would pay another promise hop).
    return target.query(query) as Promise<QueryResult>;
  }

  private addFields(statement: NamedStatement, result: ResultInternals, fields: FieldDef[]): void {
    const layout = this.byStatement.get(statement);
    if (layout && sameColumns(layout.fields, fields)) {
      result.fields = fields;
      result._parsers = layout.parsers;
      result._prebuiltEmptyResultObject = layout.emptyRow;
      return;
    }
    buildLayout.addFields.call(result, fields);
    const { _parsers: parsers, _prebuiltEmptyResultObject: emptyRow } = result;
    if (parsers && emptyRow) this.byStatement.set(statement, { fields, parsers, emptyRow });
  }
}
