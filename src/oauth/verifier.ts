import type { AccessTokenVerifier } from '../access/authenticate.js';
import { principalFromUser, USER_COLUMNS, type UserRow } from '../access/principal.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { unauthorized } from '../kit/errors.js';
import { findRecord } from './adapter.js';
import type { OAuthServer } from './provider.js';
import { oauthScopesIn } from './scopes.js';

interface AccessTokenRecord {
  accountId: string;
  clientId: string;
  grantId: string;
  aud?: string | string[];
  scope?: string;
  exp: number;
}

interface GrantRecord {
  resources?: Record<string, string>;
}

/**
 * Checks an MCP client's bearer token on every request: it exists (not revoked), is unexpired on our
 * clock, names the MCP endpoint as audience (at the address the request reached), its connection still exists, and its user is enabled.
 * The scopes are the token's narrowed by the connection's current ones (the connections page may
 * narrow them), then by the user's role.
 */
export function createAccessTokenVerifier(db: Queryable, oauth: Pick<OAuthServer, 'at'>, now: () => Date): AccessTokenVerifier {
  return {
    async verify(token, host) {
      // The resource is the MCP endpoint at the address the request reached, as its tokens were issued.
      const { resource } = oauth.at(host);
      const record = await findRecord<AccessTokenRecord>(db, 'AccessToken', token);
      if (!record) throw unauthorized('invalid_token', 'The access token is unknown, revoked or expired');
      if (record.exp * 1000 <= now().getTime()) throw unauthorized('invalid_token', 'The access token has expired');
      const audiences = Array.isArray(record.aud) ? record.aud : [record.aud];
      if (!audiences.includes(resource)) throw unauthorized('invalid_token', `The access token was not issued for ${resource}`);
      const grant = await findRecord<GrantRecord>(db, 'Grant', record.grantId);
      if (!grant) throw unauthorized('invalid_token', 'This connection was disconnected; authorize again');
      const [user] = await db.query<UserRow>(sql`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = ${record.accountId}`);
      if (!user) throw unauthorized('invalid_token', 'The user of this connection no longer exists');
      if (user.disabled_at) throw unauthorized('user_disabled', 'The user of this connection is disabled');
      const current = new Set(oauthScopesIn(grant.resources?.[resource]));
      const scopes = oauthScopesIn(record.scope).filter((scope) => current.has(scope));
      return principalFromUser(user, scopes, { kind: 'oauth', clientId: record.clientId, grantId: record.grantId, scopes });
    },
  };
}
