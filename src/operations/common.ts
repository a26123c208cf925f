import { z } from 'zod';
import type { Page } from '../store/paging.js';

/** Largest page on every v4 list; larger `limit` values are truncated to it, not rejected. */
export const MAX_PAGE_SIZE = 50;
export const DEFAULT_PAGE_SIZE = 20;

/** Required free text: trimmed, non-empty, bounded, no control characters. */
export const Text = (max: number, what: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    // U+0000–U+001F and U+007F–U+009F (Unicode's Cc) spelled so that Python's re and Go's regexp compile it too.
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    .regex(/^[^\x00-\x1F\x7F-\x9F]*$/, 'must not contain control characters')
    .describe(what);

/** Optional text: as Text (up to 200 characters), and null or "" clears it (stored as NULL). */
export const OptionalText = (what: string) =>
  z
    .union([Text(200, what), z.literal(''), z.null()])
    .transform((v) => v || null)
    .optional()
    .describe(`${what}; null or "" clears it`);

const PHONE_RULE = 'must be 5 to 30 characters of digits, spaces, +, - or parentheses, with at least 5 digits';
// The digit count is a check of its own: a lookahead in the pattern would not compile in Go's regexp.
export const Phone = z
  .string()
  .trim()
  .regex(/^[0-9 +()-]{5,30}$/, { message: PHONE_RULE, abort: true })
  .refine((phone) => (phone.match(/[0-9]/g)?.length ?? 0) >= 5, { message: PHONE_RULE, params: { rule: 'invalid_format' } })
  .describe('Phone number, such as +49 30 5550 100');

/** PostgreSQL text cannot hold U+0000: free-form strings refuse it here rather than fail in the database. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
export const withoutNul = (schema: z.ZodString) => schema.regex(/^[^\x00]*$/, 'must not contain the NUL character (U+0000)');

/** Free text a list matches against (`query`); LIKE wildcards in it match literally. */
export const SearchQuery = withoutNul(z.string().max(200));

export const Id = withoutNul(z.string().trim().min(1).max(64)).describe('Identifier');

/** ISO 3166-1 alpha-2 code; lower case is accepted and upper-cased. */
export const CountryCode = z
  .string()
  .trim()
  .regex(/^[A-Za-z]{2}$/, 'must be a two-letter ISO 3166-1 country code')
  .transform((s) => s.toUpperCase());

/** Query strings carry booleans as text; MCP and JSON bodies carry real booleans. */
export const QueryBoolean = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
  .transform((v) => v === true || v === 'true' || v === '1');

export const CompanyIdField = Id.optional().describe('Company to act in (multi-company admins)');

export const PageFields = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .transform((n) => Math.min(n, MAX_PAGE_SIZE))
    .default(DEFAULT_PAGE_SIZE)
    .describe(`Records per page, at most ${MAX_PAGE_SIZE}`),
  page: z.coerce.number().int().min(1).max(100_000).optional().describe('1-based page number'),
  cursor: z.string().max(512).optional().describe('nextCursor of the previous page'),
};

export const PageQuery = z.object(PageFields);

/** The v4 list envelope around records stored under `key` (`employees`, `teams`, …). */
export function listEnvelope<K extends string, T extends z.ZodType>(key: K, record: T) {
  return z.object({
    [key]: z.array(record),
    page: z.number().int(),
    pageSize: z.number().int(),
    totalCount: z.number().int(),
    nextCursor: z.string().nullable(),
  } as { [P in K]: z.ZodArray<T> } & {
    page: z.ZodNumber;
    pageSize: z.ZodNumber;
    totalCount: z.ZodNumber;
    nextCursor: z.ZodNullable<z.ZodString>;
  });
}

export const Timestamp = z.string().describe('ISO 8601 timestamp');

/** Renders a store page as the list envelope, records under `key`. */
export function envelopeOf<K extends string, R>(key: K, page: Page<R>) {
  return {
    [key]: page.rows,
    page: page.page,
    pageSize: page.pageSize,
    totalCount: page.totalCount,
    nextCursor: page.nextCursor,
  } as { [P in K]: R[] } & Omit<Page<R>, 'rows'>;
}
