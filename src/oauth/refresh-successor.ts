import { hkdfSync } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../domain/pin-crypto.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { findRecord, recordKey } from './adapter.js';

/*
 * A refresh token presented again within the grace window after its rotation receives the answer its
 * first presentation received (the same access and refresh tokens): a client that refreshed twice at
 * once keeps a single chain. The answer is kept sealed under a key derived from the presented token,
 * which the store never holds (only its SHA-256): the table still yields no usable token.
 */

const KIND = 'RefreshSuccessor';

/** The parts of the provider's Koa context read and written here. */
interface TokenContext {
  method: string;
  path: string;
  req: { body?: unknown };
  status: number;
  body: unknown;
  set(field: string, value: string): void;
  oidc?: { client?: { clientId: string }; entities?: { RotatedRefreshToken?: { grantId?: string } } };
}

interface SuccessorRecord {
  clientId: string;
  grantId: string;
  issuedAt: number;
  sealed: string;
}

interface RefreshSuccessorOptions {
  db: Queryable;
  now: () => Date;
  secretKey: Buffer;
  graceSeconds: number;
  tokenPath: string;
}

/** Koa middleware for the provider: answers a presentation within the grace window with the first answer. */
export function refreshSuccessors(options: RefreshSuccessorOptions) {
  const { db, now, secretKey, graceSeconds, tokenPath } = options;
  const keyOf = (token: string) => Buffer.from(hkdfSync('sha256', token, secretKey, 'oauth refresh successor', 32));
  /** Presentations of one token in this process take turns: a twin sent at once finds the first one's answer. */
  const turns = new Map<string, Promise<void>>();

  async function earlierAnswer(token: string, clientId: string | null): Promise<Record<string, unknown> | undefined> {
    const [row] = await db.query<{ payload: SuccessorRecord }>(sql`SELECT payload FROM oauth_records
      WHERE kind = ${KIND} AND id_hash = ${recordKey(token)} AND expires_at > ${now().toISOString()}`);
    // Another client, or a connection revoked since: the provider answers as for any used token.
    if (!row || row.payload.clientId !== clientId || !(await findRecord(db, 'Grant', row.payload.grantId))) return undefined;
    const answer = JSON.parse(decryptSecret(keyOf(token), row.payload.sealed, clientId)) as Record<string, unknown>;
    const elapsed = Math.floor((now().getTime() - row.payload.issuedAt) / 1000);
    return typeof answer.expires_in === 'number' ? { ...answer, expires_in: Math.max(0, answer.expires_in - elapsed) } : answer;
  }

  async function remember(token: string, clientId: string, grantId: string, answer: unknown): Promise<void> {
    const issuedAt = now().getTime();
    const record: SuccessorRecord = { clientId, grantId, issuedAt, sealed: encryptSecret(keyOf(token), JSON.stringify(answer), clientId) };
    // grant_id: disconnecting deletes it with the rest of the connection.
    await db.query(sql`INSERT INTO oauth_records (kind, id_hash, payload, grant_id, expires_at)
      VALUES (${KIND}, ${recordKey(token)}, ${JSON.stringify(record)}::jsonb, ${grantId}, ${new Date(issuedAt + graceSeconds * 1000).toISOString()})
      ON CONFLICT (kind, id_hash) DO NOTHING`);
  }

  async function respond(ctx: TokenContext, next: () => Promise<void>, token: string, clientId: string | null): Promise<void> {
    const earlier = await earlierAnswer(token, clientId);
    if (earlier) {
      ctx.status = 200;
      ctx.set('cache-control', 'no-store');
      ctx.body = earlier;
      return;
    }
    await next();
    const rotated = ctx.oidc?.entities?.RotatedRefreshToken;
    const client = ctx.oidc?.client?.clientId;
    // Stored before the answer leaves: a presentation that follows it always finds it.
    if (ctx.status === 200 && rotated?.grantId && client) await remember(token, client, rotated.grantId, ctx.body);
  }

  return async function refreshSuccessor(ctx: TokenContext, next: () => Promise<void>): Promise<void> {
    const body = ctx.method === 'POST' && ctx.path === tokenPath ? ctx.req.body : undefined;
    // routes.ts hands the token endpoint its form body already read.
    const params = Buffer.isBuffer(body) ? new URLSearchParams(body.toString('utf8')) : undefined;
    const token = params?.get('grant_type') === 'refresh_token' ? params.get('refresh_token') : null;
    if (!params || !token || graceSeconds === 0) return next();
    const key = recordKey(token);
    const turn = (turns.get(key) ?? Promise.resolve()).then(() => respond(ctx, next, token, params.get('client_id')));
    const settled = turn.then(
      () => undefined,
      () => undefined,
    );
    turns.set(key, settled);
    try {
      await turn;
    } finally {
      if (turns.get(key) === settled) turns.delete(key);
    }
  };
}
