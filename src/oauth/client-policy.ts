import type { ClientMetadata, errors as oidcErrors } from 'oidc-provider';
import { LOOPBACK_HOSTS } from '../kit/loopback.js';

/*
 * What a client may register (RFC 7591) or publish in its metadata document (CIMD): both pass
 * through here, inside oidc-provider's client validation and before anything of its own runs.
 */

/**
 * Bounds on a registration: the largest real MCP client registration (Cursor's, three redirect URIs)
 * is under 1 KiB; 2,048 characters is the URL length browsers and proxies all carry; 200 characters
 * is a name a consent page can show. Documents are also capped at 5 KiB by oidc-provider.
 */
export const REGISTRATION_LIMITS = { bodyBytes: 16 * 1024, arrayMembers: 10, uriLength: 2048, textLength: 200 } as const;

/**
 * Metadata that would make the server fetch a URL the client names (pairwise sector lists, key sets,
 * request objects, logout and CIBA callbacks): none of it serves a public MCP client, and each fetch
 * is a request made on an anonymous party's behalf. Registration opens no outbound connection.
 */
export const SERVER_FETCHED_METADATA = [
  'sector_identifier_uri',
  'jwks_uri',
  'request_uris',
  'backchannel_logout_uri',
  'backchannel_client_notification_endpoint',
] as const;

/** Fields whose strings are URIs (a CIMD client_id is one too); every other string is a name or a token of the protocol. */
const URI_FIELD = /(?:_uris?|^client_id)$/;

// localhost too: Claude Code and Cursor register it (RFC 8252 §8.3 prefers the IP literals, clients do not).
/** Schemes of MCP clients in the field that are not in reverse-domain form. */
const KNOWN_CLIENT_SCHEMES = new Set(['cursor:', 'vscode:', 'vscode-insiders:', 'windsurf:', 'claude:']);
/** The authority of a URI as written (the URL parser repairs https:///cb into https://cb/). */
const AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

/**
 * Redirect URIs of a public MCP client (RFC 8252): https; plain http on localhost, 127.0.0.1 or [::1]
 * (any port at authorization time); a native app's private-use scheme in reverse-domain form
 * (com.example.app:/callback), or one of the known clients' schemes. Never user info, never an empty host.
 */
function redirectUriProblem(uri: string): string | undefined {
  // The URL parser would drop these silently: the URI compared at authorization would not be the one checked.
  if (/[\p{Cc}\s\\]/u.test(uri)) return `${uri} must not contain spaces, control characters or backslashes`;
  const url = URL.parse(uri);
  if (!url) return `${uri} is not an absolute URI`;
  if (uri.includes('#')) return `${uri} must not contain a fragment`;
  const authority = AUTHORITY.exec(uri)?.[1];
  if (authority?.includes('@')) return `${uri} must not contain user info (user@host)`;
  if (url.protocol === 'https:' || url.protocol === 'http:') {
    if (!authority) return `${uri} must name a host after ${url.protocol}//`;
    if (url.protocol === 'https:' || LOOPBACK_HOSTS.has(url.hostname)) return undefined;
    return `${uri}: plain http is allowed only on localhost, 127.0.0.1 or [::1]`;
  }
  if (KNOWN_CLIENT_SCHEMES.has(url.protocol) || url.protocol.includes('.')) return undefined;
  return `${uri}: a native app's scheme must be in reverse-domain form such as com.example.app: (RFC 8252 §7.1), or one of ${[...KNOWN_CLIENT_SCHEMES].join(' ')}`;
}

type OidcErrors = typeof oidcErrors;

/** The size bounds: a field over them is named with its limit. */
function sizeProblem(field: string, value: unknown): string | undefined {
  const { arrayMembers, uriLength, textLength } = REGISTRATION_LIMITS;
  if (Array.isArray(value) && value.length > arrayMembers) return `${field} has ${value.length} members; at most ${arrayMembers} are accepted`;
  const limit = URI_FIELD.test(field) ? uriLength : textLength;
  const tooLong = (Array.isArray(value) ? value : [value]).find((member): member is string => typeof member === 'string' && member.length > limit);
  return tooLong === undefined ? undefined : `${field} has a value of ${tooLong.length} characters; at most ${limit} are accepted`;
}

/** Runs inside oidc-provider's client validation, before its own checks and before anything is fetched or stored. */
export function enforceClientPolicy(errors: OidcErrors, metadata: ClientMetadata): void {
  const invalid = (problem: string) => new errors.CustomOIDCProviderError('invalid_client_metadata', problem);
  const fetched = SERVER_FETCHED_METADATA.find((field) => metadata[field] !== undefined);
  if (fetched) throw invalid(`${fetched} is not accepted: this server fetches nothing a client names at registration`);
  for (const [field, value] of Object.entries(metadata)) {
    const problem = sizeProblem(field, value);
    if (problem) throw invalid(problem);
  }
  const uris = metadata.redirect_uris ?? [];
  // InvalidRedirectUri has a fixed description; the client should learn which URI and why.
  const refuse = (problem: string) => new errors.CustomOIDCProviderError('invalid_redirect_uri', problem);
  if (!Array.isArray(uris) || uris.length === 0) throw refuse('redirect_uris must list at least one URI');
  for (const uri of uris) {
    const problem = typeof uri === 'string' ? redirectUriProblem(uri) : 'redirect_uris must only contain strings';
    if (problem) throw refuse(problem);
  }
  // Every MCP client is treated as a native app: RFC 8252 rules, and any port on a loopback redirect.
  metadata.application_type = 'native';
}
