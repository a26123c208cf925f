import { createServer, type Server } from 'node:http';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import * as oauth from 'oauth4webapi';
import { DEMO_PASSWORD } from '../../src/domain/demo.js';

export const INSECURE = { [oauth.allowInsecureRequests]: true } as const;
export { DEMO_PASSWORD };

/** A cookie-keeping HTTP client that drives the real pages with form posts, as a browser would. */
export class FormBrowser {
  private readonly cookies = new Map<string, string>();

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  async fetch(url: string, init: { method?: string; form?: Record<string, string | string[]> } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(init.form)) for (const v of [value].flat()) params.append(key, v);
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(url, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /** Follows redirects until a page renders or the browser is sent to `stopAt` (the client's redirect URI). */
  async follow(url: string, stopAt: string, init?: Parameters<FormBrowser['fetch']>[1]): Promise<{ url: string; response: Response; html: string }> {
    let current = url;
    let response = await this.fetch(current, init);
    while (response.status >= 300 && response.status < 400) {
      current = new URL(response.headers.get('location')!, current).href;
      if (current.startsWith(stopAt)) return { url: current, response, html: '' };
      response = await this.fetch(current);
    }
    return { url: current, response, html: await response.text() };
  }

  async signIn(baseUrl: string, email: string, password = DEMO_PASSWORD): Promise<Response> {
    const page = await this.follow(`${baseUrl}/app/sign-in`, '\u0000');
    return this.fetch(`${baseUrl}/app/sign-in`, { form: { _csrf: csrfOf(page.html), email, password } });
  }
}

export function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error(`no CSRF token in page: ${html.slice(0, 300)}`);
  return match[1];
}

export interface AuthorizeOptions {
  email?: string;
  password?: string;
  /** Scopes ticked on the consent screen; the default keeps the screen's own choice (reads). */
  grant?: string[];
  decision?: 'allow' | 'deny';
}

/**
 * Drives an authorization request through the real sign-in and consent pages and returns the URL
 * the browser is finally sent to (the client's redirect URI with code or error) and the consent HTML.
 */
export async function authorizeInBrowser(
  browser: FormBrowser,
  authorizationUrl: string,
  redirectUri: string,
  options: AuthorizeOptions = {},
): Promise<{ callback: URL; consentHtml: string }> {
  let step = await browser.follow(authorizationUrl, redirectUri);
  if (step.url.includes('/app/sign-in')) {
    step = await browser.follow(new URL('/app/sign-in', step.url).href, redirectUri, {
      form: {
        _csrf: csrfOf(step.html),
        email: options.email ?? 'admin@demo.example',
        password: options.password ?? DEMO_PASSWORD,
        return: new URL(step.url).searchParams.get('return') ?? '',
      },
    });
  }
  if (!step.html) return { callback: new URL(step.url), consentHtml: '' };
  if (!step.url.includes('/app/interaction/')) throw new Error(`expected the consent page, got ${step.response.status} ${step.url}: ${step.html.slice(0, 500)}`);
  const consentHtml = step.html;
  const ticked = options.grant ?? [...consentHtml.matchAll(/name="scopes" value="([^"]+)" checked/g)].map((m) => m[1]!);
  const done = await browser.follow(step.url, redirectUri, {
    form: { _csrf: csrfOf(consentHtml), decision: options.decision ?? 'allow', scopes: ticked },
  });
  if (done.html) throw new Error(`consent did not redirect: ${done.response.status} ${done.html.slice(0, 500)}`);
  return { callback: new URL(done.url), consentHtml };
}

/**
 * What a desktop MCP client keeps: its registration, tokens and the pending PKCE verifier. The SDK v2
 * client's provider interface has the same shape, so this one serves both SDKs. Given a
 * `clientMetadataUrl`, the SDK names the client by that document (CIMD) where the server supports it.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  /** Where the client last sent the user to authorize. */
  authorizationUrl: URL | undefined;
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  private discovered: OAuthDiscoveryState | undefined;

  constructor(
    readonly redirectUrl = 'http://127.0.0.1:47123/oauth/callback',
    readonly clientMetadataUrl: string | undefined = undefined,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovered = state;
  }
  discoveryState() {
    return this.discovered;
  }
}

export interface RegisteredClient {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  redirectUri: string;
}

export async function discoverAndRegister(baseUrl: string, redirectUri = 'http://127.0.0.1:53682/callback'): Promise<RegisteredClient> {
  const issuer = new URL(baseUrl);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...INSECURE }));
  const registration = await oauth.dynamicClientRegistrationRequest(
    as,
    { redirect_uris: [redirectUri], client_name: 'Test MCP client', token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'] },
    INSECURE,
  );
  const client = (await oauth.processDynamicClientRegistrationResponse(registration)) as oauth.Client;
  return { as, client, redirectUri };
}

export interface PkceRequest {
  url: string;
  verifier: string;
  state: string;
}

export async function authorizationRequest(
  registered: RegisteredClient,
  resource: string,
  scope = 'mcp:orders:read mcp:orders:write mcp:employees:read',
  extra: Record<string, string> = {},
): Promise<PkceRequest> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(registered.as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: registered.client.client_id,
    redirect_uri: registered.redirectUri,
    response_type: 'code',
    scope,
    state,
    resource,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  }).toString();
  return { url: url.href, verifier, state };
}

export async function exchangeCode(registered: RegisteredClient, callback: URL, request: PkceRequest, resource: string) {
  const params = oauth.validateAuthResponse(registered.as, registered.client, callback, request.state);
  const response = await oauth.authorizationCodeGrantRequest(
    registered.as,
    registered.client,
    oauth.None(),
    params,
    registered.redirectUri,
    request.verifier,
    { additionalParameters: { resource }, ...INSECURE },
  );
  return oauth.processAuthorizationCodeResponse(registered.as, registered.client, response);
}

/** An authorization request's query for `clientId`, its other parameters valid (the code challenge a placeholder). */
export function authorizeQuery(clientId: string): string {
  return new URLSearchParams({
    client_id: clientId,
    redirect_uri: 'http://localhost:5000/callback',
    response_type: 'code',
    code_challenge: 'x'.repeat(43),
    code_challenge_method: 'S256',
  }).toString();
}

/** A raw registration POST (RFC 7591), with the metadata exactly as a client sends it. */
export async function register(baseUrl: string, metadata: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${baseUrl}/api/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: response.status, body: await response.json() };
}

/** A raw token-endpoint POST, for the requests oauth4webapi refuses to build. */
export async function tokenPost(baseUrl: string, form: Record<string, string>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${baseUrl}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: await response.json() };
}

/** The origin of client metadata documents in tests: a DocumentServer serves it. */
export const CIMD_ORIGIN = 'https://cimd.test';

export interface Document {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  delayMs?: number;
}

/**
 * Client metadata documents served by a real HTTP server on loopback; the service's fetch
 * (`fetchClientMetadata: documents.fetch`) is pointed at it for the host cimd.test.
 */
export class DocumentServer {
  readonly documents = new Map<string, Document>();
  readonly requests = new Map<string, number>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const path = request.url ?? '/';
      this.requests.set(path, (this.requests.get(path) ?? 0) + 1);
      const document = this.documents.get(path);
      const send = () => {
        if (!document) return void response.writeHead(404).end();
        const body = typeof document.body === 'string' ? document.body : JSON.stringify(document.body);
        response.writeHead(document.status ?? 200, { 'content-type': 'application/json', ...document.headers }).end(body);
      };
      if (document?.delayMs) setTimeout(send, document.delayMs);
      else send();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Serves `document` at `path`; returns the client_id naming it. */
  serve(path: string, document: Document): string {
    this.documents.set(path, document);
    return `${CIMD_ORIGIN}${path}`;
  }

  /** The service's fetch: the fixture's address for cimd.test, as DNS would give it; everything else is the provider's. */
  readonly fetch = (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const { dispatcher: _loopbackRefused, ...rest } = (init ?? {}) as RequestInit & { dispatcher?: unknown };
    return fetch(String(url).replace(CIMD_ORIGIN, this.url), rest);
  };

  fetched(path: string): number {
    return this.requests.get(path) ?? 0;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

