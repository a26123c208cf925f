import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

export interface IdTokenClaims {
  issuer: string;
  subject: string;
  email: string;
}

export interface IdTokenVerifier {
  verify(token: string): Promise<IdTokenClaims>;
}

export class IdTokenError extends Error {}

/**
 * Verifies identity-provider ID tokens: signature against the issuer's JWKS (found through
 * OIDC discovery and cached by jose), issuer, audience, expiry, and a verified email claim.
 */
export function createIdTokenVerifier(issuer: string, audience: string): IdTokenVerifier {
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

  async function keySet() {
    if (jwks) return jwks;
    const discoveryUrl = new URL('.well-known/openid-configuration', issuer.endsWith('/') ? issuer : `${issuer}/`);
    const response = await fetch(discoveryUrl, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new IdTokenError(`OIDC discovery failed: ${response.status}`);
    const metadata = (await response.json()) as { jwks_uri?: unknown; issuer?: unknown };
    if (typeof metadata.jwks_uri !== 'string') throw new IdTokenError('OIDC discovery document has no jwks_uri');
    jwks = createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: 5000 });
    return jwks;
  }

  return {
    async verify(token) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, await keySet(), { issuer, audience }));
      } catch (error) {
        throw new IdTokenError(error instanceof Error ? error.message : 'invalid ID token');
      }
      if (typeof payload.email !== 'string' || payload.email_verified === false) {
        throw new IdTokenError('ID token carries no verified email claim');
      }
      return { issuer, subject: String(payload.sub ?? ''), email: payload.email };
    },
  };
}
