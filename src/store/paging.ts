import { createHash } from 'node:crypto';
import type { Queryable } from './db.js';
import { sql, type Sql } from './sql.js';
import { badRequest } from '../errors.js';
import type { PageInput } from '../operations/common.js';

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
  /** The caller's filters; a cursor is only valid with the filters it was issued for. */
  filters: Record<string, unknown>;
}

export interface CursorState {
  after: string;
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

function decodeCursor(cursor: string, filters: string): CursorState {
  try {
    const state = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorState>;
    if (typeof state.after === 'string' && typeof state.page === 'number' && state.filters === filters) {
      return state as CursorState;
    }
  } catch {
    // fall through to the error below
  }
  throw badRequest('invalid_cursor', 'cursor is invalid, or was issued for other filters: restart from page 1', [
    { field: 'cursor', rule: 'invalid', message: 'not a nextCursor of this list with these filters' },
  ]);
}

/**
 * Keyset pagination: with a cursor, a deep page costs what page 1 costs (an index seek on `key`).
 * `page` without a cursor is offset paging, kept for clients that jump to a page number.
 */
export async function paginate<R extends { id: string }>(db: Queryable, spec: PageQuerySpec, input: PageInput): Promise<Page<R>> {
  const filters = fingerprint(spec.filters);
  const limit = input.limit;
  let where = spec.where;
  let page = input.page ?? 1;
  let offset = (page - 1) * limit;
  if (input.cursor !== undefined) {
    const state = decodeCursor(input.cursor, filters);
    where = sql`${where} AND ${spec.key} > ${state.after}`;
    page = state.page + 1;
    offset = 0;
  }
  const [rows, counted] = await Promise.all([
    db.query<R>(sql`SELECT ${spec.columns} FROM ${spec.from} WHERE ${where}
      ORDER BY ${spec.key} LIMIT ${limit + 1} OFFSET ${offset}`),
    db.query<{ n: number }>(sql`SELECT count(*) AS n FROM ${spec.from} WHERE ${spec.where}`),
  ]);
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  const nextCursor = hasMore && last ? encodeCursor({ after: last.id, page, filters }) : null;
  return { rows: pageRows, page, pageSize: limit, totalCount: counted[0]?.n ?? 0, nextCursor };
}
