import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from './deps.js';
import { encryptSecret, openSealed } from '../domain/pin-crypto.js';
import { badRequest, unprocessable } from '../kit/errors.js';
import type { Db, Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

/*
 * Idempotency-Key on REST writes (as Stripe's API and the IETF httpapi draft): a client that lost the
 * answer to a write retries it with the same key and gets the first answer, never a second write.
 *
 * The key's row is inserted in the write's own transaction, and the answer is stored there before the
 * commit: a crash (kill -9, a lost connection) keeps the write and its answer, or neither, and a retry
 * then replays the one or applies the write anew. A concurrent retry's insert waits on the first's
 * uncommitted row (PostgreSQL's unique index), so it replays the first's answer once it commits, or
 * applies the write itself if the first rolled back. Only successes are stored: a refused write changed
 * nothing, so its retry runs again. Keys are per user, kept for a day.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_TTL_HOURS = 24;
const HOUR_MS = 3_600_000;
const KEY_RULE = /^[\x21-\x7e]{1,255}$/;

/** What a stored answer is bound to (associated data of its seal): the key is per user. */
export const idempotencyContext = (userId: string, key: string) => `idempotency:${userId}:${key}`;

export interface Answer {
  status: number;
  body: unknown;
}

/** The request's Idempotency-Key, if it sent one; a malformed one is refused naming the header. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw) || !KEY_RULE.test(raw)) {
    throw badRequest('invalid_idempotency_key', 'The Idempotency-Key header must be sent once, 1 to 255 visible ASCII characters', [
      { field: 'Idempotency-Key', rule: 'format', message: '1 to 255 visible ASCII characters (a UUID is a good choice), sent once' },
    ]);
  }
  return raw;
}

/** JSON with keys sorted at every level: the same request gives the same text whatever its key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What a retry must repeat exactly: the operation and its whole input (path parameters and body). */
export const fingerprintOf = (operation: string, input: unknown): string =>
  createHash('sha256').update(`${operation}\n${canonicalJson(input)}`).digest('base64url');

/** A Db inside one open transaction: a handler's own transactions join it, so its writes and the key's row commit together. */
function joined(db: Db, tx: Queryable): Db {
  const outside = (what: string) => () => Promise.reject(new Error(`${what} is not available inside an idempotent write`));
  return {
    kind: db.kind,
    query: (statement) => tx.query(statement),
    transaction: (work) => work(tx),
    exec: outside('exec'),
    listen: outside('listen'),
    close: outside('close'),
  };
}

/**
 * The core a write runs on inside the key's transaction. Whatever would touch the database outside it
 * waits for the commit: on PGlite's one connection it would otherwise wait for the transaction, which
 * waits for it. The counters were written before the transaction (see run), and what the write starts
 * afterwards (a first use, a mail) starts once its rows are committed.
 */
function transactionCore(core: HttpDeps, tx: Queryable, afterCommit: Array<() => void>): HttpDeps {
  return {
    ...core,
    db: joined(core.db, tx),
    legacyUsage: {
      record: (...args) => void afterCommit.push(() => core.legacyUsage.record(...args)),
      flush: () => Promise.resolve(),
    },
    keyFirstUse: {
      record: (...args) => void afterCommit.push(() => core.keyFirstUse.record(...args)),
      settled: () => Promise.resolve(),
    },
    mailer: { ...core.mailer, kick: () => void afterCommit.push(() => core.mailer.kick()) },
  };
}

interface StoredKey {
  fingerprint: string;
  status: number;
  sealed_answer: string;
}

export class IdempotentWrites {
  private lastSweep = 0;

  constructor(private readonly core: HttpDeps) {}

  /**
   * `write`'s answer, run on a core whose database is the transaction that also keeps the key; or, for a
   * key this user already used for the same request, the stored answer (`replayed`).
   */
  async run(userId: string, key: string, fingerprint: string, write: (core: HttpDeps) => Promise<Answer>): Promise<Answer & { replayed: boolean }> {
    const { core } = this;
    const now = core.now();
    this.sweepNow(now);
    const context = idempotencyContext(userId, key);
    // What a write reads of this instance's pending counters (a legacy key's last call) is written first.
    await Promise.all([core.legacyUsage.flush(), core.keyFirstUse.settled()]);
    const afterCommit: Array<() => void> = [];
    const answer = await core.db.transaction(async (tx): Promise<Answer & { replayed: boolean }> => {
      // Waits while another request holds the same key uncommitted; takes over a key past its day.
      const [claimed] = await tx.query<{ claimed: boolean }>(sql`
        INSERT INTO idempotency_keys AS k (user_id, key, fingerprint, created_at, expires_at)
        VALUES (${userId}, ${key}, ${fingerprint}, ${now.toISOString()}, ${new Date(now.getTime() + IDEMPOTENCY_TTL_HOURS * HOUR_MS).toISOString()})
        ON CONFLICT (user_id, key) DO UPDATE
          SET fingerprint = EXCLUDED.fingerprint, status = NULL, sealed_answer = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
          WHERE k.expires_at <= ${now.toISOString()}
        RETURNING true AS claimed`);
      if (!claimed) {
        const [stored] = await tx.query<StoredKey>(sql`
          SELECT fingerprint, status, sealed_answer FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key}`);
        if (stored!.fingerprint !== fingerprint) {
          throw unprocessable('idempotency_key_reused', 'This Idempotency-Key was used for another request (another operation or body); send a new key for a new request', [
            { field: 'Idempotency-Key', rule: 'same_request', message: `a retry must repeat the first request exactly; keys are kept for ${IDEMPOTENCY_TTL_HOURS} hours` },
          ]);
        }
        return { status: stored!.status, body: JSON.parse(openSealed(core, stored!.sealed_answer, context)) as unknown, replayed: true };
      }
      const written = await write(transactionCore(core, tx, afterCommit));
      await tx.query(sql`
        UPDATE idempotency_keys SET status = ${written.status}, sealed_answer = ${encryptSecret(core.secretKey, JSON.stringify(written.body), context)}
        WHERE user_id = ${userId} AND key = ${key}`);
      return { ...written, replayed: false };
    });
    for (const action of afterCommit) action();
    return answer;
  }

  /** Drops expired keys, at most hourly, off the request path. */
  private sweepNow(now: Date): void {
    if (now.getTime() - this.lastSweep < HOUR_MS) return;
    this.lastSweep = now.getTime();
    this.core.db
      .query(sql`DELETE FROM idempotency_keys WHERE expires_at <= ${now.toISOString()}`)
      .catch((error: unknown) => this.core.logger.warn({ err: error }, 'expired idempotency keys not deleted; tried again within the hour'));
  }
}
