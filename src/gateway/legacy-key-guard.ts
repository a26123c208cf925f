import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_KEY_PREFIX } from '../access/api-keys.js';
import { NOT_USER_BOUND_MESSAGE } from '../access/authenticate.js';
import type { GatewayDeps } from './deps.js';
import { bearerChallenge } from '../mcp/discovery.js';
import { unauthorized, type AppError } from '../kit/errors.js';
import type { LegacyKeySurface } from './metrics.js';

/** Every v4 surface, by path prefix: a legacy key sent to any of them is refused before routing. */
const V4_SURFACES: ReadonlyArray<[prefix: string, surface: LegacyKeySurface]> = [
  ['/v4', 'rest'],
  ['/mcp', 'mcp'],
  ['/api/oauth', 'oauth'],
];

/** `path` is `prefix` or lies under it; every v2 call passes here with its key, so no `prefix/` is built per check. */
const isUnder = (path: string, prefix: string) => path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === '/');

/** The path as the router read it: percent-decoded (`/%764` is `/v4`); undefined when it cannot be decoded. */
function decodedPath(url: string): string | undefined {
  try {
    return decodeURIComponent(url.split('?')[0]!);
  } catch {
    return undefined;
  }
}

/**
 * The surface a request reaches: the matched route's pattern when there is one, so any spelling the
 * router accepts counts where it lands; else the decoded path (an unknown route under /v4 is still v4).
 */
function surfaceOf(request: FastifyRequest): LegacyKeySurface | undefined {
  const path = request.routeOptions.url ?? decodedPath(request.url);
  if (path === undefined) return undefined;
  return V4_SURFACES.find(([prefix]) => isUnder(path, prefix))?.[1];
}

/**
 * Refuses a v2 key on every v4 route with the spec's message, counted by surface, in both
 * deployments: before authentication, the proxy and routing, so no v4 route can let one through.
 * Answers the refusal for the onRequest hook to pass on; undefined lets the request through.
 */
export function refuseLegacyKeysOnV4(core: Pick<GatewayDeps, 'metrics' | 'oauth'>) {
  return (request: FastifyRequest, reply: FastifyReply): AppError | undefined => {
    const key = request.headers['x-api-key'];
    if (key === undefined) return undefined;
    const values = Array.isArray(key) ? key : [key];
    if (!values.some((value) => value.trim() !== '' && !value.trim().startsWith(API_KEY_PREFIX))) return undefined;
    const surface = surfaceOf(request);
    if (!surface) return undefined;
    core.metrics.gateway.recordLegacyKeyRejected(surface);
    // Every 401 of the MCP endpoint points to the protected-resource metadata (spec, Errors), this one too.
    if (surface === 'mcp') void reply.header('www-authenticate', bearerChallenge(core, request));
    return unauthorized('api_key_not_user_bound', NOT_USER_BOUND_MESSAGE);
  };
}
