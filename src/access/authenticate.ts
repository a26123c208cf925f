import type { IncomingHttpHeaders } from 'node:http';
import { API_KEY_PREFIX, parseApiKey, secretMatches } from './api-keys.js';
import { ROLE_CEILING } from './capabilities.js';
import { IdTokenError, type IdTokenVerifier } from './id-token.js';
import { loadUserByEmail, principalFromUser, USER_COLUMNS, type Principal, type UserRow } from './principal.js';
import type { Queryable } from '../store/db.js';
import { TopicCache, type ChangeFeed } from '../store/change-feed.js';
import { sql } from '../store/sql.js';
import { AppError, unauthorized } from '../kit/errors.js';

export const NOT_USER_BOUND_MESSAGE =
  'API key is not bound to a user. Legacy v2 keys are not accepted here: mint a v4 key (svc_sk_…) bound to a user.';

/** Where a credential is presented: a bearer is an ID token on REST and an OAuth access token on MCP. */
export type Surface = 'rest' | 'mcp';

export interface Authenticator {
  authenticate(headers: IncomingHttpHeaders, surface?: Surface): Promise<Principal>;
}

/** Verifies an OAuth access token (issued for the MCP resource) to its user and granted scopes; throws a 401 AppError. */
export interface AccessTokenVerifier {
  /** `host`: the request's Host header, which names the address (and so the resource) it reached. */
  verify(token: string, host: string | undefined): Promise<Principal>;
}

function singleHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  // Node joins a repeated header into one comma-separated value; no key or token contains a comma.
  if (Array.isArray(value) || value?.includes(',')) throw unauthorized('ambiguous_credentials', `Send the ${name} header once`);
  return value === undefined || value === '' ? undefined : value;
}

type KeyRow = UserRow & { secret_hash: string; capabilities: string[] };

/** What a key id resolves to, cached as a whole: the principal is built once per key, not on every request. */
interface KeyGrant {
  secretHash: string;
  userDisabled: boolean;
  principal: Principal;
}

const LAST_USE_PRECISION_MS = 60_000;

export interface AuthenticatorOptions {
  /** Identity-provider ID tokens, accepted as bearers on REST when configured. */
  idTokens?: IdTokenVerifier | undefined;
  /** OAuth access tokens, accepted as bearers on MCP. */
  accessTokens?: AccessTokenVerifier;
  /** Without it API keys are read on every request; with it, cached until a change is notified. */
  changes?: ChangeFeed;
}

/**
 * Resolves the request's credential to a principal. API keys are read through a cache that every
 * change to keys, users or their scope drops on every instance (see ChangeFeed); the secret is
 * compared on every request. Legacy keys are refused (and counted) before routing already, by the
 * gateway's guard; they are refused here too for callers that do not come through HTTP.
 */
export function createAuthenticator(db: Queryable, { idTokens, accessTokens, changes }: AuthenticatorOptions = {}): Authenticator {
  const keyGrants = changes && new TopicCache<KeyGrant | undefined>(changes, 'credentials');
  const lastUseWritten = new Map<string, number>();

  const loadKeyGrant = async (keyId: string): Promise<KeyGrant | undefined> => {
    const [row] = await db.query<KeyRow>(sql`
      SELECT ${USER_COLUMNS}, k.secret_hash, k.capabilities
      FROM api_keys k JOIN users u ON u.id = k.user_id
      WHERE k.id = ${keyId} AND k.revoked_at IS NULL`);
    return (
      row && {
        secretHash: row.secret_hash,
        userDisabled: Boolean(row.disabled_at),
        principal: principalFromUser(row, row.capabilities, { kind: 'api_key', keyId }),
      }
    );
  };

  // Last use is informational: a minute's precision spares a write per request.
  function noteLastUse(keyId: string) {
    const now = Date.now();
    if (now - (lastUseWritten.get(keyId) ?? 0) < LAST_USE_PRECISION_MS) return;
    if (lastUseWritten.size >= 10_000) lastUseWritten.clear();
    lastUseWritten.set(keyId, now);
    void db
      .query(sql`UPDATE api_keys SET last_used_at = now()
        WHERE id = ${keyId} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`)
      .catch(() => undefined);
  }

  async function byApiKey(rawKey: string): Promise<Principal> {
    if (!rawKey.startsWith(API_KEY_PREFIX)) {
      throw unauthorized('api_key_not_user_bound', NOT_USER_BOUND_MESSAGE);
    }
    const parsed = parseApiKey(rawKey);
    if (!parsed) throw unauthorized('invalid_api_key', 'The API key is malformed');
    const { keyId } = parsed;
    // Unknown and revoked keys are not cached: a guessing caller cannot fill the cache.
    const grant = keyGrants ? await keyGrants.get(keyId, () => loadKeyGrant(keyId), (found) => found !== undefined) : await loadKeyGrant(keyId);
    if (!grant || !secretMatches(parsed.secret, grant.secretHash)) {
      throw unauthorized('invalid_api_key', 'The API key is unknown or revoked');
    }
    if (grant.userDisabled) throw unauthorized('user_disabled', 'The user this API key is bound to is disabled');
    noteLastUse(keyId);
    return grant.principal;
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
    async authenticate(headers, surface = 'rest') {
      const apiKey = singleHeader(headers, 'x-api-key');
      const authorization = singleHeader(headers, 'authorization');
      if (apiKey !== undefined && authorization !== undefined) {
        throw unauthorized('ambiguous_credentials', 'Send either X-API-KEY or Authorization, not both');
      }
      if (apiKey !== undefined) return byApiKey(apiKey.trim());
      if (authorization !== undefined) {
        const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
        if (surface === 'mcp') {
          if (!match) throw unauthorized('invalid_authorization', 'Authorization must be "Bearer <OAuth access token>"');
          if (!accessTokens) throw unauthorized('oauth_not_configured', 'OAuth is not enabled here; send X-API-KEY: svc_sk_…');
          return accessTokens.verify(match[1]!, headers.host);
        }
        if (!match) throw unauthorized('invalid_authorization', 'Authorization must be "Bearer <ID token>"');
        return byIdToken(match[1]!);
      }
      throw new AppError(401, 'unauthenticated', 'Missing credential: send X-API-KEY: svc_sk_… (or Authorization: Bearer <ID token>)');
    },
  };
}
