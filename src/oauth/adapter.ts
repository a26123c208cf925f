import type { Adapter, AdapterPayload } from 'oidc-provider';
import { hashSecret } from '../access/api-keys.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

/** oidc-provider record kinds we read ourselves (connections page, bearer verifier). */
export type OAuthRecordKind = 'AccessToken' | 'RefreshToken' | 'Grant' | 'Client' | 'Session' | 'AuthorizationCode';

/** Ids are tokens, codes and handles: only their SHA-256 is stored, so the table yields no usable token. */
export const recordKey = (id: string) => hashSecret(id);

export async function findRecord<T = AdapterPayload>(db: Queryable, kind: OAuthRecordKind, id: string): Promise<T | undefined> {
  const [row] = await db.query<{ payload: T }>(sql`SELECT payload FROM oauth_records
    WHERE kind = ${kind} AND id_hash = ${recordKey(id)} AND (expires_at IS NULL OR expires_at > now())`);
  return row?.payload;
}

/** Deletes a grant (a connection) and every token and code issued under it. */
export async function destroyGrant(db: Queryable, grantId: string): Promise<void> {
  await db.query(sql`DELETE FROM oauth_records WHERE grant_id = ${grantId} OR (kind = 'Grant' AND id_hash = ${recordKey(grantId)})`);
}

/** A registered client nobody has authorized yet is forgotten after a day; its first grant keeps it. */
export const UNUSED_CLIENT_TTL_SECONDS = 86_400;

/** Kinds whose id is a bearer secret: their payload keeps no copy of it (find restores it from the id). */
const SECRET_ID_KINDS = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode', 'RegistrationAccessToken', 'ClientCredentials']);

export interface AdapterOptions {
  db: Queryable;
  now: () => Date;
  /** Seconds after its rotation a refresh token's presentation receives the rotation's answer again. */
  refreshGraceSeconds: number;
}

/** The oidc-provider storage adapter over our database (PGlite or PostgreSQL). */
export function createAdapterClass(options: AdapterOptions): new (name: string) => Adapter {
  const { db, now, refreshGraceSeconds } = options;
  return class DbAdapter implements Adapter {
    constructor(private readonly kind: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const stored = SECRET_ID_KINDS.has(this.kind) ? { ...payload, jti: undefined } : payload;
      // Registration is the only write of a Client (registration management is off).
      const lifetime = expiresIn || (this.kind === 'Client' ? UNUSED_CLIENT_TTL_SECONDS : 0);
      const expiresAt = lifetime ? new Date(Date.now() + lifetime * 1000).toISOString() : null;
      if (this.kind === 'Client') {
        // Each registration clears out the clients that expired unused (and every other expired record).
        await db.query(sql`DELETE FROM oauth_records WHERE expires_at < now()`);
      }
      if (this.kind === 'Grant' && typeof payload.clientId === 'string') {
        await db.query(sql`UPDATE oauth_records SET expires_at = NULL
          WHERE kind = 'Client' AND id_hash = ${recordKey(payload.clientId)} AND expires_at IS NOT NULL`);
      }
      await db.query(sql`INSERT INTO oauth_records (kind, id_hash, payload, grant_id, uid, account_id, expires_at)
        VALUES (${this.kind}, ${recordKey(id)}, ${JSON.stringify(stored)}::jsonb, ${payload.grantId ?? null},
          ${payload.uid ?? null}, ${payload.accountId ?? null}, ${expiresAt})
        ON CONFLICT (kind, id_hash) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
          uid = EXCLUDED.uid, account_id = EXCLUDED.account_id, expires_at = EXCLUDED.expires_at`);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      const payload = await this.read(sql`id_hash = ${recordKey(id)}`);
      return payload && SECRET_ID_KINDS.has(this.kind) ? { ...payload, jti: id } : payload;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.read(sql`uid = ${uid}`);
    }

    async findByUserCode(): Promise<AdapterPayload | undefined> {
      return undefined; // the device flow is not enabled
    }

    async consume(id: string): Promise<void> {
      const at = now().toISOString();
      if (this.kind === 'AuthorizationCode') {
        // Two exchanges of one code racing past oidc-provider's "consumed?" check: the row lock lets one win.
        const won = await db.query(sql`UPDATE oauth_records SET consumed_at = ${at}
          WHERE kind = ${this.kind} AND id_hash = ${recordKey(id)} AND consumed_at IS NULL RETURNING 1 AS won`);
        if (won.length === 0) {
          // Loaded already: consume only runs inside the provider.
          const { errors } = await import('oidc-provider');
          throw new errors.InvalidGrant('authorization code already consumed');
        }
        return;
      }
      if (this.kind === 'RefreshToken') return this.consumeRefreshToken(id, at);
      // The first consumption's time stays: the grace window never extends.
      await db.query(sql`UPDATE oauth_records SET consumed_at = COALESCE(consumed_at, ${at})
        WHERE kind = ${this.kind} AND id_hash = ${recordKey(id)}`);
    }

    /**
     * A refresh token rotates once. Presented again within the grace window, it receives the answer of
     * its rotation (refresh-successor.ts), so it reaches here only from a twin racing that rotation on
     * another instance: refused without harm, the twin's retry receives the same answer. Later, its use
     * is a replay (someone else holds the token): the whole grant is revoked and the request fails.
     */
    private async consumeRefreshToken(id: string, at: string): Promise<void> {
      const won = await db.query(sql`UPDATE oauth_records SET consumed_at = ${at}
        WHERE kind = 'RefreshToken' AND id_hash = ${recordKey(id)} AND consumed_at IS NULL RETURNING 1 AS won`);
      if (won.length > 0) return;
      const [row] = await db.query<{ grant_id: string | null; consumed_at: string | null }>(
        sql`SELECT grant_id, consumed_at FROM oauth_records WHERE kind = 'RefreshToken' AND id_hash = ${recordKey(id)}`,
      );
      const { errors } = await import('oidc-provider');
      if (row?.consumed_at && this.withinGrace(row.consumed_at)) {
        throw new errors.InvalidGrant('refresh token is being rotated by a concurrent request; send it again to receive the same answer');
      }
      if (row?.grant_id) await destroyGrant(db, row.grant_id);
      throw new errors.InvalidGrant('refresh token reused: the connection is revoked');
    }

    private withinGrace(consumedAt: string): boolean {
      return now().getTime() - new Date(consumedAt).getTime() < refreshGraceSeconds * 1000;
    }

    async destroy(id: string): Promise<void> {
      await db.query(sql`DELETE FROM oauth_records WHERE kind = ${this.kind} AND id_hash = ${recordKey(id)}`);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.query(sql`DELETE FROM oauth_records WHERE kind = ${this.kind} AND grant_id = ${grantId}`);
    }

    private async read(where: ReturnType<typeof sql>): Promise<AdapterPayload | undefined> {
      const [row] = await db.query<{ payload: AdapterPayload; consumed_at: string | null }>(sql`
        SELECT payload, consumed_at FROM oauth_records
        WHERE kind = ${this.kind} AND ${where} AND (expires_at IS NULL OR expires_at > now())`);
      if (!row) return undefined;
      if (row.consumed_at === null) return row.payload;
      // Within the grace window a rotated refresh token still reads as unused: oidc-provider would
      // revoke the grant of a consumed one, and a twin racing the rotation is no replay (consume decides).
      const withinGrace = this.kind === 'RefreshToken' && this.withinGrace(row.consumed_at);
      return withinGrace ? row.payload : { ...row.payload, consumed: row.consumed_at };
    }
  };
}
