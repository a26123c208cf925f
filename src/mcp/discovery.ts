import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { McpDeps } from './deps.js';
import { OAUTH_SCOPES } from '../oauth/scopes.js';
import type { IssuerAt } from '../oauth/addresses.js';

export const MCP_PATH = '/mcp';
const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The base URL clients reach us at: the OAuth issuer's, so resource and authorization-server URLs always agree. */
export function publicBaseUrl(core: McpDeps): string {
  return core.oauth.issuer;
}

/** The base URL a request reached us at (see OAuthServer.at): the one its discovery documents and challenges name. */
export function requestBaseUrl(core: { oauth: IssuerAt }, request: FastifyRequest): string {
  return core.oauth.at(request.headers.host).issuer;
}

function resourceMetadataUrl(baseUrl: string): string {
  return `${baseUrl}${METADATA_PATH}`;
}

/**
 * The WWW-Authenticate challenge of every 401 and 403 of the MCP endpoint (RFC 6750 §3, RFC 9728 §5.1):
 * where the metadata is, and the scopes to ask for. A first challenge names every scope OAuth grants:
 * clients ask for what it names, and many never step up later (SDK v1 clients answer a 403 by
 * refreshing); the consent page and the role still decide what is granted.
 */
export function bearerChallenge(
  core: { oauth: IssuerAt },
  request: FastifyRequest,
  options: { error?: 'invalid_token' | 'insufficient_scope'; scope?: readonly string[] } = {},
): string {
  const error = options.error ? `error="${options.error}", ` : '';
  return `Bearer ${error}scope="${(options.scope ?? OAUTH_SCOPES).join(' ')}", resource_metadata="${resourceMetadataUrl(requestBaseUrl(core, request))}"`;
}

/** RFC 9728 protected-resource metadata with the spec's four fields. */
export function protectedResourceMetadata(baseUrl: string) {
  return {
    resource: `${baseUrl}${MCP_PATH}`,
    authorization_servers: [baseUrl],
    scopes_supported: [...OAUTH_SCOPES],
    bearer_methods_supported: ['header'],
  };
}

/** The protected-resource metadata at the root form and the path-inserted form RFC 9728 derives from `{base}/mcp`. */
const RESOURCE_METADATA_PATHS = [METADATA_PATH, `${METADATA_PATH}${MCP_PATH}`];

/** Every document a client reads to connect: the resource's metadata and the authorization server's. */
export const DISCOVERY_PATHS = [...RESOURCE_METADATA_PATHS, '/.well-known/oauth-authorization-server'];

export function registerProtectedResourceMetadata(app: FastifyInstance, core: McpDeps): void {
  for (const url of RESOURCE_METADATA_PATHS) {
    app.get(url, async (request) => protectedResourceMetadata(requestBaseUrl(core, request)));
  }
}
