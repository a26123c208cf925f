import { isOAuthScope, OAUTH_SCOPES } from './scopes.js';

/*
 * Parameters of authorization, PAR and token requests, adjusted before oidc-provider reads them.
 * oidc-provider issues only the scopes a request names, and compares `resource` byte for byte; real
 * clients send no scope (or only OpenID ones) and spell the resource's scheme and host as they like.
 */

/** What a client that names no permission is offered: reading, never writing. */
const DEFAULT_SCOPES: readonly string[] = OAUTH_SCOPES.filter((scope) => scope.endsWith(':read'));

/**
 * `resource` in its RFC 3986 normal form (WHATWG URL: scheme and host lower-cased, default port
 * dropped) when that is the MCP endpoint; anything else is left for oidc-provider to refuse.
 */
function canonicalResource(value: string, resource: string): string {
  return URL.parse(value)?.href === URL.parse(resource)?.href ? resource : value;
}

/**
 * Adds the read scopes to a request that names none of the service's scopes (the alternative is a
 * consent page with nothing to approve), and normalises `resource`. Returns whether anything changed.
 */
export function adjustAuthorizationParams(params: URLSearchParams, resource: string, kind: 'authorization' | 'token'): boolean {
  // A pushed request's parameters were adjusted when it was pushed; the reference must stay alone.
  if (params.has('request_uri')) return false;
  let changed = false;
  const resources = params.getAll('resource');
  const canonical = resources.map((value) => canonicalResource(value, resource));
  if (canonical.some((value, i) => value !== resources[i])) {
    params.delete('resource');
    for (const value of canonical) params.append('resource', value);
    changed = true;
  }
  if (kind === 'authorization') {
    const scopes = (params.get('scope') ?? '').split(' ').filter(Boolean);
    if (!scopes.some(isOAuthScope)) {
      params.set('scope', [...scopes, ...DEFAULT_SCOPES].join(' '));
      changed = true;
    }
  }
  return changed;
}
