import type { z } from 'zod';

export interface FieldProblem {
  field: string;
  rule: string;
  message: string;
}

/** A failure with a stable machine-readable code; the HTTP layer renders it as the error envelope. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** A dependency is out of reach for a moment: 503 with Retry-After, never a 500, so the caller retries. */
export class ServiceUnavailable extends AppError {
  constructor(
    code: string,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(503, code, message);
    this.name = 'ServiceUnavailable';
  }
}

export interface ErrorObject {
  code: string;
  message: string;
  details?: unknown;
}

/**
 * The error object of every answer that reports one (REST's and the gateway's envelopes, v2's shape, an
 * MCP tool's error result, the CLI's JSON output): code and message, and details when there are any.
 */
export function errorObject({ code, message, details }: ErrorObject): ErrorObject {
  return details === undefined ? { code, message } : { code, message, details };
}

export const badRequest = (code: string, message: string, details?: unknown) => new AppError(400, code, message, details);
export const unauthorized = (code: string, message: string) => new AppError(401, code, message);
export const forbidden = (code: string, message: string, details?: unknown) => new AppError(403, code, message, details);
export const notFound = (what: string, id: string) => new AppError(404, 'not_found', `${what} ${id} was not found`);
export const conflict = (code: string, message: string, details?: unknown) => new AppError(409, code, message, details);
export const unprocessable = (code: string, message: string, details?: unknown) =>
  new AppError(422, code, message, details);

/** v2 field names that v4 renamed or moved: a strict-schema rejection names the successor. */
// A Map, not an object literal: a key such as `constructor` must not find Object's own properties.
const LEGACY_FIELD_HINTS: ReadonlyMap<string, string> = new Map([
  ['secondaryEmail', 'renamed to personalEmail in v4'],
  ['teamId', 'replaced by teamName in v4; teams are addressed by name'],
  ['deliveryAddress', 'the delivery address is a set of fields on the employee in v4 (addressOne, city, zipCode, country, …)'],
]);

/** Turns zod issues into field problems that name the field and the rule. */
export function validationError(error: z.ZodError, where = 'request'): AppError {
  const details: FieldProblem[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      const base = issue.path.join('.');
      for (const key of issue.keys) {
        const field = base ? `${base}.${key}` : key;
        const hint = LEGACY_FIELD_HINTS.get(key);
        details.push({ field, rule: 'unknown_field', message: hint ? `unknown field: ${hint}` : 'unknown field' });
      }
      continue;
    }
    // A refinement names its rule in params.rule (`unique`, `allowed_for_type`); zod calls them all `custom`.
    const rule = issue.code === 'custom' && typeof issue.params?.rule === 'string' ? issue.params.rule : issue.code;
    details.push({ field: issue.path.join('.') || '(body)', rule, message: issue.message });
  }
  const summary = details.map((d) => `${d.field}: ${d.message}`).join('; ');
  return badRequest('validation_failed', `Invalid ${where}: ${summary}`, details);
}
