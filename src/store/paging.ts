import { createHash } from 'node:crypto';
import type { Queryable } from './db.js';
import { join, raw, sql, type Sql } from './sql.js';
import { badRequest } from '../kit/errors.js';

/** What a caller asks of a list: a page size, and an offset page or the previous page's cursor. */
export interface PageRequest {
  limit: number;
  page?: number | undefined;
  cursor?: string | undefined;
}

export interface Page<R> {
  rows: R[];
  page: number;
  pageSize: number;
  totalCount: number;
  nextCursor: string | null;
}

export interface PageQuerySpec {
  columns: Sql;
  from: Sql;
  where: Sql;
  /** Unique, indexed key the pages follow (time-ordered ids give creation order). */
  key: Sql;
  /** Pages on (column, key) instead of key alone; `key` then breaks ties. */
  order?: PageOrder | undefined;
  /** The caller's filters; a cursor is only valid with the filters it was issued for. */
  filters: Record<string, unknown>;
  /**
   * Set when `where` selects exactly every row of these companies in `relation` (a company-wide scope,
   * no filter): the total is read from the counters the writes keep (migration 0013), not by counting.
   */
  everyRowOf?: { relation: CountedRelation; companyIds: readonly string[] } | undefined;
  /**
   * The index on (company_id, the order's column, key), or (company_id, key) without an order, that
   * reads a company's rows in page order. A page of every row of one company then has one best plan,
   * this index read backward or forward, whatever the company or cursor: it is planned once per
   * connection ('generic'). Left to itself at a million rows, PostgreSQL prices that plan with a tenth
   * of the rows for the LIMIT parameter and replans every call, which costs as much as the page.
   */
  pageIndex?: string | undefined;
  /**
   * A free-text search: conditions on the listed rows, each one an index can serve (a trigram LIKE, a
   * key = ANY(array) of rows found in another table's index); a row matches when any holds. `everyRowOf`
   * is then not consulted. See searchPage.
   */
  matching?: readonly [Sql, ...Sql[]] | undefined;
}

/** The tables whose rows per company are counted as they are written. */
export type CountedRelation = 'employees' | 'teams' | 'devices' | 'orders' | 'company_addresses';

function totalOf(db: Queryable, spec: PageQuerySpec): Promise<{ n: number }[]> {
  const counted = spec.everyRowOf;
  return counted
    ? db.query<{ n: number }>(sql`SELECT coalesce(sum(n), 0) AS n FROM row_counts
        WHERE relation = ${counted.relation} AND company_id = ANY(${[...counted.companyIds]}::text[])`)
    : db.query<{ n: number }>(sql`SELECT count(*) AS n FROM ${spec.from} WHERE ${spec.where}`);
}

/** The column that carries a search's total beside its page rows. */
const SEARCH_TOTAL = 'searchTotal';

/**
 * A search's page and total in one statement and one pass over what matched. `found` holds each
 * matching row's key and sort value (a union of one index path per condition, each applying the
 * caller's scope and filters as it reads the row); the total counts it, the page is cut from it by
 * the cursor, and only the page's rows are read in full. The total rides on every row, and on a row
 * of nulls when the page is empty.
 */
async function searchPage<R extends { id: string }>(
  db: Queryable,
  spec: PageQuerySpec,
  matching: readonly [Sql, ...Sql[]],
  cut: { cursor: CursorState | undefined; limit: number; offset: number },
): Promise<[R[], number]> {
  const sortValue = spec.order ? sql`, ${spec.order.column} AS sort` : sql``;
  const branches = matching.map((condition) => sql`SELECT ${spec.key} AS key${sortValue} FROM ${spec.from} WHERE ${spec.where} AND ${condition}`);
  // The same order on the CTE's sort column, and on the page's output column.
  const foundOrder = spec.order && { ...spec.order, column: sql`sort` };
  const pageOrder = spec.order && { ...spec.order, column: sql`page.${raw(`"${spec.order.field}"`)}` };
  const after = cut.cursor ? afterCursor(foundOrder, sql`key`, cut.cursor) : sql`TRUE`;
  const rows = await db.query<R & { [SEARCH_TOTAL]: number }>(sql`
    WITH found AS MATERIALIZED (${join(branches, ' UNION ')})
    SELECT page.*, total.n AS "${raw(SEARCH_TOTAL)}"
    FROM (SELECT count(*) AS n FROM found) total
    LEFT JOIN LATERAL (SELECT ${spec.columns} FROM ${spec.from} WHERE ${spec.key} = ANY(ARRAY(
      SELECT key FROM found WHERE ${after} ORDER BY ${orderedBy(foundOrder, sql`key`)} LIMIT ${cut.limit + 1} OFFSET ${cut.offset}))) page ON TRUE
    ORDER BY ${orderedBy(pageOrder, sql`page.id`)}`);
  const totalCount = rows[0]?.[SEARCH_TOTAL] ?? 0;
  const pageRows = rows.filter((row) => row.id !== null);
  for (const row of pageRows) delete (row as Partial<typeof row>)[SEARCH_TOTAL];
  return [pageRows, totalCount];
}

/**
 * A sort on a NOT NULL column; the cursor carries the last row's value of `field`. Timestamps
 * must be stored at millisecond precision, as their ISO text in the cursor is.
 */
export interface PageOrder {
  column: Sql;
  /** The row field that holds `column`'s value. */
  field: string;
  type: 'text' | 'timestamptz';
  descending: boolean;
}

/** Exactly the ISO text the store returns for a timestamp. */
function isIsoTimestamp(text: string): boolean {
  const time = new Date(text);
  return !Number.isNaN(time.getTime()) && time.toISOString() === text;
}

/** A cursor is client input: its sort value must be of the column's type before it reaches SQL. */
function validSortValue(order: PageOrder | undefined, value: unknown): boolean {
  if (!order) return true;
  if (typeof value !== 'string') return false;
  return order.type === 'text' ? !value.includes('\0') : isIsoTimestamp(value);
}

export interface CursorState {
  after: string;
  /** The last row's sort value, with an `order`. */
  value?: unknown;
  page: number;
  filters: string;
}

export function fingerprint(filters: Record<string, unknown>): string {
  const stable = Object.keys(filters)
    .sort()
    .map((k) => [k, filters[k]]);
  return createHash('sha256').update(JSON.stringify(stable)).digest('base64url').slice(0, 12);
}

export function encodeCursor(state: CursorState): string {
  return Buffer.from(JSON.stringify(state)).toString('base64url');
}

function decodeCursor(cursor: string, filters: string, order: PageOrder | undefined): CursorState {
  try {
    const state = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorState>;
    const valid = typeof state.after === 'string' && typeof state.page === 'number' && validSortValue(order, state.value);
    if (valid && state.filters === filters) {
      return state as CursorState;
    }
  } catch {
    // fall through to the error below
  }
  throw badRequest('invalid_cursor', 'cursor is invalid, or was issued for other filters: restart from page 1', [
    { field: 'cursor', rule: 'invalid', message: 'not a nextCursor of this list with these filters' },
  ]);
}

/** The keyset predicate after the cursor's row: a row comparison on (the order's column, `key`) when sorting on a column. */
function afterCursor(order: Omit<PageOrder, 'field'> | undefined, key: Sql, state: CursorState): Sql {
  if (!order) return sql`${key} > ${state.after}`;
  const value = sql`CAST(${state.value} AS ${raw(order.type)})`;
  const { column, descending } = order;
  return descending ? sql`(${column}, ${key}) < (${value}, ${state.after})` : sql`(${column}, ${key}) > (${value}, ${state.after})`;
}

/** ORDER BY the order's column then `key`, or `key` alone: for the table, the search's CTE and the page's output. */
function orderedBy(order: Pick<PageOrder, 'column' | 'descending'> | undefined, key: Sql): Sql {
  const direction = raw(order?.descending ? 'DESC' : 'ASC');
  return order ? sql`${order.column} ${direction}, ${key} ${direction}` : sql`${key} ${direction}`;
}

/**
 * Keyset pagination: with a cursor, a deep page costs what page 1 costs (an index seek on `key`,
 * or on (order column, key)). `page` without a cursor is offset paging, kept for clients that
 * jump to a page number.
 */
export async function paginate<R extends { id: string }>(db: Queryable, spec: PageQuerySpec, input: PageRequest): Promise<Page<R>> {
  const filters = fingerprint(spec.filters);
  const limit = input.limit;
  const cursor = input.cursor === undefined ? undefined : decodeCursor(input.cursor, filters, spec.order);
  const page = cursor ? cursor.page + 1 : (input.page ?? 1);
  const offset = cursor ? 0 : (page - 1) * limit;
  const where = cursor ? sql`${spec.where} AND ${afterCursor(spec.order, spec.key, cursor)}` : spec.where;
  const [rows, totalCount] = spec.matching
    ? await searchPage<R>(db, spec, spec.matching, { cursor, limit, offset })
    : await Promise.all([
        db.query<R>(
          sql`SELECT ${spec.columns} FROM ${spec.from} WHERE ${where} ORDER BY ${orderedBy(spec.order, spec.key)} LIMIT ${limit + 1} OFFSET ${offset}`.planned(
            spec.pageIndex !== undefined && spec.everyRowOf?.companyIds.length === 1 ? 'generic' : 'auto',
          ),
        ),
        totalOf(db, spec).then((counted) => counted[0]?.n ?? 0),
      ]);
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  const value = spec.order && last ? (last as Record<string, unknown>)[spec.order.field] : undefined;
  const nextCursor = hasMore && last ? encodeCursor({ after: last.id, value, page, filters }) : null;
  return { rows: pageRows, page, pageSize: limit, totalCount, nextCursor };
}
