import { createHmac, createPrivateKey, generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { ClientMetadata, GrantModel, Provider } from 'oidc-provider';
import type { Config } from '../kit/config.js';
import { loadOnce } from '../kit/load-once.js';
import { serviceAddresses } from './addresses.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { createAdapterClass } from './adapter.js';
import { enforceClientPolicy, SERVER_FETCHED_METADATA } from './client-policy.js';
import { resolvesOnlyToPublicAddresses } from './public-address.js';
import { refreshSuccessors } from './refresh-successor.js';
import { OAUTH_SCOPES } from './scopes.js';
import { escapeHtml } from '../kit/html.js';

export const OAUTH_PATHS = {
  authorization: '/api/oauth/authorize',
  token: '/api/oauth/token',
  registration: '/api/oauth/register',
  revocation: '/api/oauth/revoke',
  pushed_authorization_request: '/api/oauth/par',
} as const;

/** Where oidc-provider sends the browser to sign in and consent (our own pages). */
export const interactionPath = (uid: string) => `/app/interaction/${uid}`;

/** The authorization server at one address of the service. */
export interface OAuthAddress {
  /** The issuer: the service's base URL at this address. */
  issuer: string;
  /** The MCP endpoint at this address: the resource (RFC 8707) its tokens are issued for, and their audience. */
  resource: string;
  /** oidc-provider for this issuer, imported and built on first use: commands that serve no HTTP never load it. */
  provider(): Promise<Provider>;
}

/** The authorization server at its configured address (PUBLIC_BASE_URL, else http://HOST:PORT), and at the others. */
export interface OAuthServer extends OAuthAddress {
  /** The address a request reached (see ServiceAddresses.at). */
  at(host: string | undefined): OAuthAddress;
  /** The MCP resource at every address: a connection is granted for one of them. */
  resources: readonly string[];
}

/**
 * Signing key for the provider's own needs (we issue opaque tokens, never ID tokens): per process. The
 * key is generated as DER and exported from a key object of its own: on Node 20, exporting the generated
 * key object itself as JWK could deadlock the process (the export holds the key's lock while allocating;
 * a garbage collection then ran the finished generation job's destructor, which takes the same lock).
 * Generated on the thread pool, so start-up goes on meanwhile (synchronously it held the start a fifth of a second).
 */
export async function ephemeralJwks() {
  const { privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  });
  const key = createPrivateKey({ key: privateKey, format: 'der', type: 'pkcs8' });
  return { keys: [{ ...key.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: 'ephemeral' }] };
}

/**
 * Forgets that the user declined `scopes` of `resource` at an earlier consent. oidc-provider asks the
 * user only for what a grant has neither given nor declined, and what is declined stays out of tokens:
 * a client asking again for a declined scope (a step-up) must be asked, and given it if the user agrees.
 */
export function forgetDeclined(grant: GrantModel, resource: string, scopes: readonly string[]): void {
  const declined = grant.rejected?.resources;
  const kept = declined?.[resource]?.split(' ').filter((scope) => !scopes.includes(scope));
  if (!declined || kept === undefined) return;
  if (kept.length > 0) declined[resource] = kept.join(' ');
  else delete declined[resource];
}

/** The part of oidc-provider's context that loading a grant reads. */
interface GrantLoadingContext {
  oidc: {
    provider: Provider;
    client: { clientId: string };
    params: { scope?: unknown };
    session: { grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
  };
}

export interface OAuthServerOptions {
  config: Config;
  db: Queryable;
  secretKey: Buffer;
  /** During a rotation, cookies signed under the key being replaced still verify. */
  previousSecretKey?: Buffer | undefined;
  now: () => Date;
  fetchClientMetadata?: typeof fetch | undefined;
}

const generateRsaKeyPair = promisify(generateKeyPair);

/** A client_id that is an https URL names its metadata document (CIMD); the others were registered here. */
export function isMetadataDocumentClient(clientId: string): boolean {
  return /^https:\/\//i.test(clientId);
}

export function createOAuthServer(options: OAuthServerOptions): OAuthServer {
  // One signing key for every address's provider, made on the thread pool while the first one loads.
  const signingKey = loadOnce(ephemeralJwks);
  const addresses = serviceAddresses(options.config, (issuer): OAuthAddress => {
    const resource = `${issuer}/mcp`;
    return { issuer, resource, provider: loadOnce(() => buildProvider(options, issuer, resource, signingKey())) };
  });
  return {
    ...addresses.configured,
    at: addresses.at,
    resources: [...new Set(addresses.all.map((address) => address.resource))],
  };
}

async function buildProvider(options: OAuthServerOptions, issuer: string, resource: string, signingKey: ReturnType<typeof ephemeralJwks>): Promise<Provider> {
  const { config, db, secretKey, previousSecretKey, now, fetchClientMetadata } = options;
  // oidc-provider 9 warns once at import on Node 20 (it supports 22+); our tests cover its use here.
  const [{ Provider, errors }, jwks] = await Promise.all([import('oidc-provider'), signingKey]);
  // oidc-provider signs with the first key and verifies with any.
  const cookieKeys = [secretKey, previousSecretKey].flatMap((key) => (key ? [createHmac('sha256', key).update('oauth-cookies').digest('base64url')] : []));

  const provider = new Provider(issuer, {
    adapter: createAdapterClass({ db, now, refreshGraceSeconds: config.oauthRefreshGraceSeconds }),
    jwks,
    cookies: {
      keys: cookieKeys,
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    routes: {
      ...OAUTH_PATHS,
      end_session: '/api/oauth/session/end',
      jwks: '/api/oauth/jwks',
      userinfo: '/api/oauth/userinfo',
      introspection: '/api/oauth/introspect',
    },
    // Only plain OAuth scopes of the MCP resource; 'openid' stays so that a client sending it is not refused.
    scopes: ['openid', 'offline_access'],
    responseTypes: ['code'],
    clientAuthMethods: ['none'],
    clientDefaults: {
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    // software_id is kept for the connections page; its validator applies our client policy. The
    // fields that make the server fetch are listed so that a client naming one is refused, never ignored.
    extraClientMetadata: {
      properties: ['software_id', 'software_version', ...SERVER_FETCHED_METADATA],
      validator(_ctx: unknown, key: string, _value: unknown, metadata: ClientMetadata) {
        if (key === 'software_id') enforceClientPolicy(errors, metadata);
      },
    },
    pkce: { required: () => true },
    // As oidc-provider's own (the grant just consented to, else the browser session's for this client),
    // except that a new request for a scope the user declined before goes to consent again.
    loadExistingGrant: async (ctx: GrantLoadingContext) => {
      const consented = ctx.oidc.result?.consent?.grantId;
      const grantId = consented ?? ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      const grant = grantId ? await ctx.oidc.provider.Grant.find(grantId) : undefined;
      const requested = typeof ctx.oidc.params.scope === 'string' ? ctx.oidc.params.scope.split(' ') : [];
      if (grant && !consented) forgetDeclined(grant, resource, requested);
      return grant;
    },
    ...(fetchClientMetadata ? { fetch: fetchClientMetadata } : {}),
    features: {
      devInteractions: { enabled: false },
      // Client ID Metadata Documents: oidc-provider checks the URL's shape, fetches it over https with
      // special-use addresses refused, 2.5 s and 5 KiB at most and no redirect, checks client_id and
      // refuses secrets, then caches it as HTTP caching says, held between a minute and a day.
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        cacheDuration: { min: 60, max: 86_400 },
        // Refused before connecting too; a test setting brings its own network (fetchClientMetadata).
        allowFetch: async (_ctx: unknown, clientId: string) =>
          fetchClientMetadata !== undefined || resolvesOnlyToPublicAddresses(new URL(clientId).hostname),
      },
      registration: { enabled: true, initialAccessToken: false },
      // A client revokes only its own tokens (public clients identify themselves by client_id).
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId,
      },
      userinfo: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`resource must be ${resource}`);
          return {
            scope: OAUTH_SCOPES.join(' '),
            audience: resource,
            accessTokenTTL: config.oauthAccessTokenTtl,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
    ttl: {
      AccessToken: config.oauthAccessTokenTtl,
      AuthorizationCode: config.oauthCodeTtl,
      RefreshToken: config.oauthRefreshTokenTtl,
      Grant: config.oauthRefreshTokenTtl,
      Session: config.sessionTtl,
      Interaction: 900,
    },
    rotateRefreshToken: true,
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    // A connection outlives the browser sign-in that created it; disconnecting ends it.
    expiresWithSession: () => false,
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => interactionPath(interaction.uid) },
    findAccount: async (_ctx: unknown, accountId: string) => {
      const [user] = await db.query<{ id: string }>(sql`SELECT id FROM users WHERE id = ${accountId} AND disabled_at IS NULL`);
      return user ? { accountId: user.id, claims: () => ({ sub: user.id }) } : undefined;
    },
    renderError: (ctx: RefusalContext & { type: string }, out: Record<string, string>) => {
      ctx.state[RENDERED_ERROR] = out.error;
      ctx.type = 'html';
      ctx.body = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign-in error</title>
<main><h1>Sign-in error</h1><p>${escapeHtml(out.error ?? 'error')}: ${escapeHtml(out.error_description ?? '')}</p></main></html>`;
    },
  });
  provider.use(refreshSuccessors({ db, now, secretKey, graceSeconds: config.oauthRefreshGraceSeconds, tokenPath: OAUTH_PATHS.token }));
  rememberDocumentFailures(provider.Client, now);
  return provider;
}

/** Where renderError leaves the code of the refusal it shows as a page, for providerRefusalCode. */
const RENDERED_ERROR = Symbol('rendered OAuth error');

/** The part of the provider's Koa context a refusal is read from. */
export interface RefusalContext {
  status: number;
  body: unknown;
  state: Record<symbol, unknown>;
}

/**
 * The OAuth error code (invalid_grant, invalid_client…) of an answer the provider refused with, as
 * RFC 6749 §5.2 names it in a JSON body, or as an error page showed it; undefined for any other answer.
 */
export function providerRefusalCode(ctx: RefusalContext): string | undefined {
  if (ctx.status < 400) return undefined;
  const code = typeof ctx.body === 'object' && ctx.body !== null ? (ctx.body as { error?: unknown }).error : ctx.state[RENDERED_ERROR];
  return typeof code === 'string' ? code : undefined;
}

/** How long a client metadata document that could not be used is not fetched again. */
const DOCUMENT_FAILURE_SECONDS = 300;
/** Failures remembered at most (the oldest are forgotten first): the authorize rate limit bounds their arrival. */
const REMEMBERED_FAILURES = 1000;

/**
 * Client lookups by metadata document: one lookup per URL at a time, and a failed one (unreachable,
 * refused, invalid) is answered from memory for DOCUMENT_FAILURE_SECONDS. oidc-provider caches only
 * the documents it accepted, and looks a client up again to render an error: without this, every
 * authorization request naming a bad document would fetch it twice.
 */
function rememberDocumentFailures(clients: Provider['Client'], now: () => Date): void {
  const find = clients.find.bind(clients);
  const failures = new Map<string, { error: unknown; until: number }>();
  const pending = new Map<string, ReturnType<typeof find>>();
  const remember = (clientId: string, error: unknown) => {
    failures.delete(clientId);
    failures.set(clientId, { error, until: now().getTime() + DOCUMENT_FAILURE_SECONDS * 1000 });
    const oldest = failures.keys().next();
    if (failures.size > REMEMBERED_FAILURES && !oldest.done) failures.delete(oldest.value);
  };
  clients.find = (clientId: string) => {
    if (typeof clientId !== 'string' || !isMetadataDocumentClient(clientId)) return find(clientId);
    const failure = failures.get(clientId);
    if (failure && failure.until > now().getTime()) return Promise.reject(failure.error);
    let lookup = pending.get(clientId);
    if (!lookup) {
      lookup = find(clientId)
        .catch((error: unknown) => {
          // The client's fault (a 4xx: unreachable, refused, invalid) is remembered, never one of ours.
          const status = (error as { statusCode?: unknown }).statusCode;
          if (typeof status === 'number' && status < 500) remember(clientId, error);
          throw error;
        })
        .finally(() => pending.delete(clientId));
      pending.set(clientId, lookup);
    }
    return lookup;
  };
}
