import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashSecret } from '../access/api-keys.js';
import { USER_COLUMNS, type UserRow } from '../access/principal.js';
import type { PagesDeps } from './deps.js';
import { baseUrlOf } from '../kit/config.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { forbidden } from '../kit/errors.js';
import { noteCaller } from '../http/request-log.js';

const SESSION_COOKIE = 'svc_session';
const CSRF_COOKIE = 'svc_csrf';

/**
 * Sign-ins to the pages: a random session id in an HttpOnly, SameSite=Lax cookie scoped to /app,
 * stored only hashed. CSRF: every visitor holds a random cookie and each form carries an HMAC of
 * it, which a cross-site page can neither read nor compute.
 */
export function createSessions(core: PagesDeps) {
  const secure = baseUrlOf(core.config).startsWith('https:');
  const cookieOptions = { path: '/app', httpOnly: true, sameSite: 'lax' as const, secure };
  const csrfKey = createHmac('sha256', core.secretKey).update('page-csrf').digest();
  const csrfFor = (value: string) => createHmac('sha256', csrfKey).update(value).digest('base64url');

  return {
    /** The form token of this visitor, issuing the cookie it is derived from when missing. */
    csrfToken(request: FastifyRequest, reply: FastifyReply): string {
      let value = request.cookies[CSRF_COOKIE];
      if (!value) {
        value = randomBytes(24).toString('base64url');
        request.cookies[CSRF_COOKIE] = value;
        void reply.setCookie(CSRF_COOKIE, value, cookieOptions);
      }
      return csrfFor(value);
    },

    /** Refuses a form post whose token does not match this visitor's cookie. */
    checkCsrf(request: FastifyRequest): void {
      const value = request.cookies[CSRF_COOKIE];
      const sent = (request.body as Record<string, unknown> | undefined)?._csrf;
      const expected = value ? Buffer.from(csrfFor(value)) : undefined;
      const given = typeof sent === 'string' ? Buffer.from(sent) : undefined;
      if (!expected || !given || expected.length !== given.length || !timingSafeEqual(expected, given)) {
        throw forbidden('csrf_failed', 'The form expired or came from another site; reload the page and try again');
      }
    },

    async signIn(reply: FastifyReply, userId: string): Promise<void> {
      const id = randomBytes(32).toString('base64url');
      const expiresAt = new Date(core.now().getTime() + core.config.sessionTtl * 1000).toISOString();
      await core.db.query(sql`INSERT INTO app_sessions (id_hash, user_id, expires_at) VALUES (${hashSecret(id)}, ${userId}, ${expiresAt})`);
      void reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions, maxAge: core.config.sessionTtl });
    },

    /** The signed-in, enabled user of this request, if any (on the request's log line too). */
    async currentUser(request: FastifyRequest): Promise<UserRow | undefined> {
      const id = request.cookies[SESSION_COOKIE];
      if (!id) return undefined;
      const [user] = await core.db.query<UserRow>(sql`SELECT ${USER_COLUMNS}
        FROM app_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id_hash = ${hashSecret(id)} AND s.expires_at > ${core.now().toISOString()} AND u.disabled_at IS NULL`);
      if (user) noteCaller(request, { userId: user.id, companyIds: user.company_ids });
      return user;
    },

    async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const id = request.cookies[SESSION_COOKIE];
      if (id) await endSession(core.db, hashSecret(id));
      void reply.clearCookie(SESSION_COOKIE, cookieOptions);
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;

/** Ends a page sign-in and the authorization server's browser session of the same user. */
async function endSession(db: Queryable, idHash: string): Promise<void> {
  const [ended] = await db.query<{ user_id: string }>(sql`DELETE FROM app_sessions WHERE id_hash = ${idHash} RETURNING user_id`);
  if (ended) await db.query(sql`DELETE FROM oauth_records WHERE kind = 'Session' AND account_id = ${ended.user_id}`);
}
