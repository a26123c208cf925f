import type { FastifyInstance } from 'fastify';
import type { Core } from '../core.js';
import { AppError } from '../errors.js';
import { rateLimited } from '../http/rate-limit.js';
import { observeOAuth } from './metrics.js';
import { OAUTH_PATHS, type OAuthServer } from './provider.js';
import { OAUTH_SCOPES } from './scopes.js';

/** The provider's paths this file handles before oidc-provider does. */
const PREHANDLED_PATHS: ReadonlySet<string> = new Set([OAUTH_PATHS.token, OAUTH_PATHS.registration]);

/** RFC 8414 authorization-server metadata: the spec's fields, and only the five grantable scopes. */
export function authorizationServerMetadata(oauth: Pick<OAuthServer, 'issuer'>) {
  const at = (path: string) => `${oauth.issuer}${path}`;
  return {
    issuer: oauth.issuer,
    authorization_endpoint: at(OAUTH_PATHS.authorization),
    token_endpoint: at(OAUTH_PATHS.token),
    registration_endpoint: at(OAUTH_PATHS.registration),
    revocation_endpoint: at(OAUTH_PATHS.revocation),
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...OAUTH_SCOPES],
  };
}

/** Token requests per minute: per address, and per client however many addresses it uses. */
export const TOKEN_LIMITS = { perClient: 30, perIp: 120, windowSeconds: 60 } as const;

/** Client registrations per minute per address: registration is open, so each one is a row anyone could add. */
export const REGISTRATION_LIMIT = { perIp: 20, windowSeconds: 60 } as const;

/** The client_id of a token request's form body (public clients send it there), if readable. */
function clientIdOf(body: unknown): string | undefined {
  if (!Buffer.isBuffer(body)) return undefined;
  return new URLSearchParams(body.toString('utf8')).get('client_id') ?? undefined;
}

/**
 * Serves the authorization server: its metadata, and oidc-provider (a Koa app) on /api/oauth/*.
 * The provider reads its own request bodies; only registration and token requests are read here
 * first (to adjust the metadata, to rate-limit per client), and handed over already read.
 */
export async function registerOAuthRoutes(app: FastifyInstance, core: Core): Promise<void> {
  const { oauth } = core;
  app.get('/.well-known/oauth-authorization-server', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(authorizationServerMetadata(oauth)),
  );
  const provider = await oauth.provider();
  observeOAuth(provider, core.metrics.registry);
  const handle = provider.callback();
  // Code and refresh-token guessing.
  const { perClient, perIp, windowSeconds } = TOKEN_LIMITS;
  const limitTokenPerIp = rateLimited(core, { name: 'oauth_token', limit: perIp, windowSeconds, key: (request) => ({ ip: request.ip }) });
  const limitTokenPerClient = rateLimited(core, {
    name: 'oauth_token',
    limit: perClient,
    windowSeconds,
    key: (request) => ({ client: clientIdOf(request.body) }),
  });
  const limitRegistrationPerIp = rateLimited(core, {
    name: 'oauth_registration',
    limit: REGISTRATION_LIMIT.perIp,
    windowSeconds: REGISTRATION_LIMIT.windowSeconds,
    key: (request) => ({ ip: request.ip }),
  });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    // Registration metadata is adjusted before oidc-provider sees it (RFC 7591 lets the server do so):
    // - no token_endpoint_auth_method means a public client here; RFC 7591 would default it to
    //   client_secret_basic, and oidc-provider would issue a secret nobody may use;
    // - a registered `scope` is dropped: MCP clients register the resource's scopes, which oidc-provider
    //   checks against its OpenID scopes; what a client gets is decided by consent and the five-scope ceiling.
    scope.post(OAUTH_PATHS.registration, { preHandler: limitRegistrationPerIp }, async (request, reply) => {
      const raw = request.body as Buffer;
      let metadata: unknown;
      try {
        metadata = JSON.parse(raw.toString('utf8'));
      } catch {
        metadata = undefined; // oidc-provider answers the unparsable body itself
      }
      const isObject = typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata);
      const adjusted = isObject ? { token_endpoint_auth_method: 'none', ...(metadata as Record<string, unknown>), scope: undefined } : undefined;
      // oidc-provider reads an already-read body from req.body (and warns once that it did).
      Object.assign(request.raw, { body: adjusted ? Buffer.from(JSON.stringify(adjusted)) : raw });
      reply.hijack();
      await handle(request.raw, reply.raw);
    });
    scope.post(OAUTH_PATHS.token, { preHandler: [limitTokenPerIp, limitTokenPerClient] }, async (request, reply) => {
      // Read here for the per-client limit; oidc-provider takes the already-read body from req.body.
      Object.assign(request.raw, { body: request.body });
      reply.hijack();
      await handle(request.raw, reply.raw);
    });
  });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.all('/api/oauth/*', async (request, reply) => {
      // oidc-provider's router ignores case and a trailing slash, Fastify's does not: another spelling
      // of a path handled above would reach the provider without its rate limits or adjustments.
      const path = request.url.split('?')[0]!;
      const canonical = path.toLowerCase().replace(/\/+$/, '');
      if (canonical !== path && PREHANDLED_PATHS.has(canonical)) {
        throw new AppError(404, 'route_not_found', `No route ${request.method} ${path}; use ${canonical}`);
      }
      reply.hijack();
      await handle(request.raw, reply.raw);
    });
  });
}
