import type { IncomingHttpHeaders } from 'node:http';
import { API_KEY_PREFIX, parseApiKey, secretMatches } from './api-keys.js';
import { ROLE_CEILING } from './capabilities.js';
import { IdTokenError, type IdTokenVerifier } from './id-token.js';
import { loadUserByEmail, principalFromUser, USER_COLUMNS, type Principal, type UserRow } from './principal.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { AppError, unauthorized } from '../errors.js';

export const NOT_USER_BOUND_MESSAGE =
  'API key is not bound to a user. Legacy v2 keys are not accepted here: mint a v4 key (svc_sk_…) bound to a user.';

export interface Authenticator {
  authenticate(headers: IncomingHttpHeaders): Promise<Principal>;
}

function singleHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  // Node joins a repeated header into one comma-separated value; no key or token contains a comma.
  if (Array.isArray(value) || value?.includes(',')) throw unauthorized('ambiguous_credentials', `Send the ${name} header once`);
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Resolves the request's credential to a principal, reading the database on every call.
 * `onLegacyKey` counts refused non-v4 keys: the integrations still to migrate.
 */
export function createAuthenticator(
  db: Queryable,
  idTokens: IdTokenVerifier | undefined,
  onLegacyKey?: () => void,
): Authenticator {
  async function byApiKey(rawKey: string): Promise<Principal> {
    if (!rawKey.startsWith(API_KEY_PREFIX)) {
      onLegacyKey?.();
      throw unauthorized('api_key_not_user_bound', NOT_USER_BOUND_MESSAGE);
    }
    const parsed = parseApiKey(rawKey);
    if (!parsed) throw unauthorized('invalid_api_key', 'The API key is malformed');
    const rows = await db.query<UserRow & { secret_hash: string; capabilities: string[] }>(sql`
      SELECT ${USER_COLUMNS}, k.secret_hash, k.capabilities
      FROM api_keys k JOIN users u ON u.id = k.user_id
      WHERE k.id = ${parsed.keyId} AND k.revoked_at IS NULL`);
    const row = rows[0];
    if (!row || !secretMatches(parsed.secret, row.secret_hash)) {
      throw unauthorized('invalid_api_key', 'The API key is unknown or revoked');
    }
    if (row.disabled_at) throw unauthorized('user_disabled', 'The user this API key is bound to is disabled');
    // Last use is informational; a minute's precision spares a write per request.
    void db
      .query(sql`UPDATE api_keys SET last_used_at = now()
        WHERE id = ${parsed.keyId} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`)
      .catch(() => undefined);
    return principalFromUser(row, row.capabilities, { kind: 'api_key', keyId: parsed.keyId });
  }

  async function byIdToken(token: string): Promise<Principal> {
    if (token.startsWith(API_KEY_PREFIX)) {
      throw unauthorized('bearer_not_api_key', 'Authorization: Bearer takes an identity-provider ID token; send API keys in X-API-KEY');
    }
    if (!idTokens) throw unauthorized('id_token_not_accepted', 'No identity provider is configured; use an API key in X-API-KEY');
    let claims;
    try {
      claims = await idTokens.verify(token);
    } catch (error) {
      if (error instanceof IdTokenError) throw unauthorized('invalid_id_token', `Invalid ID token: ${error.message}`);
      throw error;
    }
    const user = await loadUserByEmail(db, claims.email);
    if (!user) throw unauthorized('unknown_user', 'No user matches the ID token email');
    if (user.disabled_at) throw unauthorized('user_disabled', 'This user is disabled');
    // A signed-in user acts as themselves: everything their role allows.
    return principalFromUser(user, ROLE_CEILING[user.role], {
      kind: 'id_token',
      issuer: claims.issuer,
      subject: claims.subject,
    });
  }

  return {
    async authenticate(headers) {
      const apiKey = singleHeader(headers, 'x-api-key');
      const authorization = singleHeader(headers, 'authorization');
      if (apiKey !== undefined && authorization !== undefined) {
        throw unauthorized('ambiguous_credentials', 'Send either X-API-KEY or Authorization, not both');
      }
      if (apiKey !== undefined) return byApiKey(apiKey.trim());
      if (authorization !== undefined) {
        const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
        if (!match) throw unauthorized('invalid_authorization', 'Authorization must be "Bearer <ID token>"');
        return byIdToken(match[1]!);
      }
      throw new AppError(401, 'unauthenticated', 'Missing credential: send X-API-KEY: svc_sk_… (or Authorization: Bearer <ID token>)');
    },
  };
}
