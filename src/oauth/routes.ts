import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Provider } from 'oidc-provider';
import { AppError } from '../kit/errors.js';
import { loadAfterListen } from '../kit/load-once.js';
import type { HttpDeps } from '../http/deps.js';
import { rateLimited } from '../http/rate-limit.js';
import { noteErrorCode } from '../http/request-log.js';
import { REGISTRATION_LIMITS } from './client-policy.js';
import { oauthCounters, observeOAuth } from './metrics.js';
import { OAUTH_PATHS, providerRefusalCode, type OAuthAddress, type OAuthServer, type RefusalContext } from './provider.js';
import { adjustAuthorizationParams } from './request-params.js';
import { OAUTH_SCOPES } from './scopes.js';
import { hijackKeepingHeaders } from '../http/hijack.js';

/** What the OAuth routes use: the HTTP frame's services and the authorization server itself. */
export interface OAuthDeps extends HttpDeps {
  oauth: OAuthServer;
}

/** The provider's paths this file handles before oidc-provider does. */
const PREHANDLED_PATHS: ReadonlySet<string> = new Set([
  OAUTH_PATHS.token,
  OAUTH_PATHS.registration,
  OAUTH_PATHS.authorization,
  OAUTH_PATHS.pushed_authorization_request,
]);

/** RFC 8414 authorization-server metadata: the spec's fields, and only the five grantable scopes. */
export function authorizationServerMetadata(oauth: Pick<OAuthAddress, 'issuer'>) {
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
    // Every authorization response carries `iss` (RFC 9207 §3 asks the server to say so).
    authorization_response_iss_parameter_supported: true,
    // An https URL as client_id names the client's metadata document; registration stays the fallback.
    client_id_metadata_document_supported: true,
  };
}

/** Token requests per minute: per address, and per client however many addresses it uses. */
export const TOKEN_LIMITS = { perClient: 30, perIp: 120, windowSeconds: 60 } as const;

/**
 * Authorization requests per minute and address: each may make the server fetch a client's metadata
 * document, and a person signing in sends a handful.
 */
export const AUTHORIZE_LIMITS = { perIp: 60, windowSeconds: 60 } as const;

/** Methods that need a client secret: a client asking for one is registered as public instead (RFC 7591 §3.2.1). */
const SECRET_AUTH_METHODS: ReadonlySet<unknown> = new Set(['client_secret_post', 'client_secret_basic', 'client_secret_jwt']);

/**
 * Registration metadata as registered here (RFC 7591 lets the server replace what it will not do):
 * - a client asking for a secret-based method (Claude registers with client_secret_post) or for none
 *   is a public client; PKCE, required for every client, protects its codes, and refresh tokens rotate.
 *   RFC 7591 would default a missing method to client_secret_basic, and oidc-provider would issue a
 *   secret nobody may use;
 * - a registered `scope` is dropped: MCP clients register the resource's scopes, which oidc-provider
 *   checks against its OpenID scopes; what a client gets is decided by consent and the five-scope ceiling.
 */
function registrationMetadata(requested: Record<string, unknown>): Record<string, unknown> {
  const { client_secret: _secret, client_secret_expires_at: _expiry, scope: _scope, ...metadata } = requested;
  const method = metadata.token_endpoint_auth_method;
  return { ...metadata, token_endpoint_auth_method: method === undefined || SECRET_AUTH_METHODS.has(method) ? 'none' : method };
}

/** A registration body over the limit is refused in RFC 7591's terms; any other error is the app's to answer. */
function refuseLargeRegistration(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error;
  noteErrorCode(request, 'invalid_client_metadata');
  return reply.status(413).send({
    error: 'invalid_client_metadata',
    error_description: `The registration body exceeds ${REGISTRATION_LIMITS.bodyBytes} bytes; a client's metadata fits in far less`,
  });
}

/** Hands a form body, adjusted if need be, to oidc-provider, which reads an already-read body from req.body. */
function formBody(body: unknown, resource: string, kind: 'authorization' | 'token'): unknown {
  if (!Buffer.isBuffer(body)) return body;
  const params = new URLSearchParams(body.toString('utf8'));
  return adjustAuthorizationParams(params, resource, kind) ? Buffer.from(params.toString()) : body;
}

/** A form-urlencoded value (RFC 6749 §2.3.1 encodes Basic's id and secret so), or undefined when malformed. */
function formDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * A public client presenting HTTP Basic with an empty secret (Goose-like clients do) is a client of
 * method none: its id moves into the form, where a public client sends it, and the header goes. A
 * secret, or an id differing from the form's, is left for the provider to refuse.
 */
function basicWithoutSecretAsNone(request: FastifyRequest): void {
  const header = request.headers.authorization;
  const encoded = typeof header === 'string' ? /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)?.[1] : undefined;
  if (encoded === undefined || !Buffer.isBuffer(request.body)) return;
  const credentials = Buffer.from(encoded, 'base64').toString('utf8');
  if (!credentials.endsWith(':') || credentials.indexOf(':') !== credentials.length - 1) return;
  const clientId = formDecoded(credentials.slice(0, -1));
  const form = new URLSearchParams(request.body.toString('utf8'));
  if (!clientId || (form.has('client_id') && form.get('client_id') !== clientId)) return;
  form.set('client_id', clientId);
  request.body = Buffer.from(form.toString());
  delete request.headers.authorization;
}

/** The client_id of a token request's form body (public clients send it there), if readable. */
function clientIdOf(body: unknown): string | undefined {
  if (!Buffer.isBuffer(body)) return undefined;
  return new URLSearchParams(body.toString('utf8')).get('client_id') ?? undefined;
}

/** The Fastify request of each raw request handed to oidc-provider: where its refusal's code is noted. */
const handedOver = new WeakMap<IncomingMessage, FastifyRequest>();
/** Providers already noting their refusals (one core's provider may serve several apps). */
const noting = new WeakSet<Provider>();

/**
 * Puts the OAuth error code of each refusal the provider answers on the request's log line, as REST
 * refusals have theirs: noted after the provider's routes ran, before it writes the answer.
 */
function noteProviderRefusals(provider: Provider): void {
  if (noting.has(provider)) return;
  noting.add(provider);
  provider.use(async (ctx: RefusalContext & { req: IncomingMessage }, next) => {
    await next();
    const request = handedOver.get(ctx.req);
    const code = providerRefusalCode(ctx);
    if (request && code !== undefined) noteErrorCode(request, code);
  });
}

/**
 * Serves the authorization server: its metadata, and oidc-provider (a Koa app) on /api/oauth/*.
 * The provider reads its own request bodies; only registration and token requests are read here
 * first (to adjust the metadata, to rate-limit per client), and handed over already read.
 */
export async function registerOAuthRoutes(app: FastifyInstance, core: OAuthDeps): Promise<void> {
  const { oauth } = core;
  const addressOf = (request: FastifyRequest) => oauth.at(request.headers.host);
  app.get('/.well-known/oauth-authorization-server', async (request, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(authorizationServerMetadata(addressOf(request))),
  );
  // Each address's provider (loaded once, a failed load tried again) as a request handler, observed once.
  const handlers = new WeakMap<Provider, ReturnType<Provider['callback']>>();
  const counters = oauthCounters(core.metrics.registry);
  const handlerFor = async (address: OAuthAddress) => {
    const provider = await address.provider();
    let handler = handlers.get(provider);
    if (!handler) {
      observeOAuth(provider, counters);
      noteProviderRefusals(provider);
      handler = provider.callback();
      handlers.set(provider, handler);
    }
    return handler;
  };
  // oidc-provider is the largest module tree: the instance is ready sooner without it.
  loadAfterListen(app, core.logger, 'The OAuth provider', () => handlerFor(oauth));
  /** Lets the provider write the answer itself. */
  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const callback = await handlerFor(addressOf(request));
    hijackKeepingHeaders(reply);
    handedOver.set(request.raw, request);
    await callback(request.raw, reply.raw);
  };
  // Code and refresh-token guessing.
  const { perClient, perIp, windowSeconds } = TOKEN_LIMITS;
  const limitTokenPerIp = rateLimited(core, { name: 'oauth_token', limit: perIp, windowSeconds, key: (request) => ({ ip: request.ip }) });
  // Per client *and* address: a public client_id is no secret, so a limit on the id alone would let
  // anyone spend it for every user of that client. Codes and refresh tokens cannot be guessed anyway.
  const limitTokenPerClient = rateLimited(core, {
    name: 'oauth_token',
    limit: perClient,
    windowSeconds,
    key: (request) => {
      const clientId = clientIdOf(request.body);
      return { 'client from this address': clientId === undefined ? undefined : `${clientId}\0${request.ip}` };
    },
  });
  // Registration is open, so each one is a row anyone could add: limited per address, and a client
  // nobody authorizes expires (UNUSED_CLIENT_TTL_SECONDS), so what abuse adds is bounded.
  const registrationLimits = [
    { limit: core.config.oauthRegistrationsPerMinute, windowSeconds: 60 },
    { limit: core.config.oauthRegistrationsPerDay, windowSeconds: 86_400 },
  ];
  const limitRegistrationPerIp = registrationLimits.map(({ limit, windowSeconds }) =>
    rateLimited(core, { name: 'oauth_registration', limit, windowSeconds, key: (request) => ({ ip: request.ip }) }),
  );
  const limitAuthorizePerIp = rateLimited(core, {
    name: 'oauth_authorize',
    limit: AUTHORIZE_LIMITS.perIp,
    windowSeconds: AUTHORIZE_LIMITS.windowSeconds,
    key: (request) => ({ ip: request.ip }),
  });
  const provide = async (request: FastifyRequest, reply: FastifyReply, body: unknown) => {
    // oidc-provider reads an already-read body from req.body (and warns once that it did).
    Object.assign(request.raw, { body });
    await handle(request, reply);
  };
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    const registrationOptions = { preHandler: limitRegistrationPerIp, bodyLimit: REGISTRATION_LIMITS.bodyBytes, errorHandler: refuseLargeRegistration };
    scope.post(OAUTH_PATHS.registration, registrationOptions, async (request, reply) => {
      const raw = request.body as Buffer;
      let metadata: unknown;
      try {
        metadata = JSON.parse(raw.toString('utf8'));
      } catch {
        metadata = undefined; // oidc-provider answers the unparsable body itself
      }
      const isObject = typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata);
      await provide(request, reply, isObject ? Buffer.from(JSON.stringify(registrationMetadata(metadata as Record<string, unknown>))) : raw);
    });
    // Read here for the per-client limit, and to normalise `resource`.
    const publicBasic = async (request: FastifyRequest) => basicWithoutSecretAsNone(request);
    scope.post(OAUTH_PATHS.token, { preHandler: [publicBasic, limitTokenPerIp, limitTokenPerClient] }, (request, reply) =>
      provide(request, reply, formBody(request.body, addressOf(request).resource, 'token')),
    );
    for (const path of [OAUTH_PATHS.authorization, OAUTH_PATHS.pushed_authorization_request]) {
      scope.post(path, { preHandler: limitAuthorizePerIp }, (request, reply) =>
        provide(request, reply, formBody(request.body, addressOf(request).resource, 'authorization')),
      );
    }
    scope.get(OAUTH_PATHS.authorization, { preHandler: limitAuthorizePerIp }, async (request, reply) => {
      const [path, query = ''] = request.raw.url!.split('?', 2) as [string, string?];
      const params = new URLSearchParams(query);
      if (adjustAuthorizationParams(params, addressOf(request).resource, 'authorization')) request.raw.url = `${path}?${params}`;
      await handle(request, reply);
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
      await handle(request, reply);
    });
  });
}
