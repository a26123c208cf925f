import { createHmac } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';

export interface RateLimitRule {
  /** Names the limit in the 429 message, the metric label and the bucket keys, e.g. "oauth_token". */
  name: string;
  /** Requests allowed per window and identity. */
  limit: number;
  windowSeconds: number;
  /**
   * The identities one request counts against, by kind, e.g. `{ ip: request.ip, credential: clientId }`.
   * Each has its own bucket; undefined or empty values are not counted. One identity over the limit refuses.
   */
  key: (request: FastifyRequest) => Record<string, string | undefined>;
}

/**
 * A preHandler that fails with 429 (Retry-After set on the reply) once a caller exceeds `rule`:
 * the v4 error envelope from the app's error handler, the form again on a page. Counted in
 * core.shared, so the limit holds across instances with Redis (and falls back to per-process
 * counting, never to no limit, while Redis is down).
 */
export function rateLimited(core: HttpDeps, rule: RateLimitRule) {
  const enforce = rateLimiter(core, rule);
  return async function rateLimit(request: FastifyRequest, reply: FastifyReply) {
    await enforce(reply, rule.key(request));
  };
}

/**
 * The same limit for identities only the handler knows (the principal it authenticated): call it
 * with them. Fails with 429 as rateLimited does.
 */
export function rateLimiter(core: HttpDeps, rule: Omit<RateLimitRule, 'key'>) {
  // Identities (IPs, client ids, usernames) are keyed by an HMAC, never stored in clear in Redis.
  // The window is part of the bucket: one limit may count the same identity per minute and per day.
  const bucketOf = (kind: string, value: string) =>
    `${rule.name}:${rule.windowSeconds}:${kind}:${createHmac('sha256', core.secretKey).update(value).digest('base64url').slice(0, 32)}`;

  return async function enforce(reply: FastifyReply, identitiesByKind: Record<string, string | undefined>) {
    const identities = Object.entries(identitiesByKind).filter((entry): entry is [string, string] => Boolean(entry[1]));
    const results = await Promise.all(
      identities.map(async ([kind, value]) => ({
        kind,
        result: await core.shared.rateLimit(bucketOf(kind, value), rule.limit, rule.windowSeconds),
      })),
    );
    const refused = results.filter(({ result }) => !result.allowed);
    if (refused.length === 0) return;
    const retryAfter = Math.max(...refused.map(({ result }) => result.retryAfterSeconds));
    const per = refused.map(({ kind }) => kind).join(' and ');
    core.metrics.http.recordRateLimited(rule.name);
    void reply.header('retry-after', String(retryAfter));
    // Thrown, not sent: each error handler answers in its surface's shape (the v4 envelope, a page).
    throw new AppError(
      429,
      'rate_limited',
      `Too many requests: the ${rule.name} limit allows ${rule.limit} per ${rule.windowSeconds} s per ${per}; retry after ${retryAfter} s`,
    );
  };
}
