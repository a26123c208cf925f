import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../kit/config.js';
import type { HttpDeps } from './deps.js';
import { forbidden } from '../kit/errors.js';
import { sendError } from './errors.js';
import { LOOPBACK_HOSTS } from '../kit/loopback.js';

/*
 * CORS for what a browser-based MCP client reaches across origins: the MCP endpoint, the discovery
 * documents and registration. The origins allowed are those the MCP endpoint's DNS-rebinding check
 * admits (loopback, PUBLIC_BASE_URL's, MCP_ALLOWED_ORIGINS), so CORS never opens what that check
 * closes. The other OAuth endpoints answer CORS themselves (oidc-provider, from a client's redirect URIs).
 */


/** What a browser client reads of our answers besides the safelisted headers. */
const EXPOSED_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After';
/** What it may send: MCP's own headers and both credentials. */
const ALLOWED_HEADERS = 'Authorization, X-API-KEY, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID';
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * Whether a browser page of `origin` may use the MCP endpoint: our own public origin, a loopback
 * origin or a configured one. Requests without Origin (every non-browser client) pass.
 */
export function originAllowed(core: HttpDeps, origin: string | undefined): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return LOOPBACK_HOSTS.has(url.hostname) || configuredOrigins(core.config).has(url.origin);
}

const configured = new WeakMap<Config, ReadonlySet<string>>();

/** PUBLIC_BASE_URL's origin and MCP_ALLOWED_ORIGINS, parsed once per configuration, not per request. */
function configuredOrigins(config: Config): ReadonlySet<string> {
  let origins = configured.get(config);
  if (!origins) {
    origins = new Set([...(config.publicBaseUrl ? [config.publicBaseUrl] : []), ...config.mcpAllowedOrigins].map((o) => new URL(o).origin));
    configured.set(config, origins);
  }
  return origins;
}

const originOf = (request: FastifyRequest) => (typeof request.headers.origin === 'string' ? request.headers.origin : undefined);

/** The CORS headers of an answer to an allowed origin (every answer varies by Origin, allowed or not). */
function allow(reply: FastifyReply, origin: string): void {
  void reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', EXPOSED_HEADERS);
}

/** Answers CORS on `paths` (GET/POST/DELETE routes registered elsewhere) and their preflights. */
export function registerCors(app: FastifyInstance, core: HttpDeps, paths: readonly string[]): void {
  const served = new Set(paths);
  // On the request, before any handler: the MCP endpoint hijacks its replies and copies these headers over.
  app.addHook('onRequest', (request, reply, done) => {
    const origin = originOf(request);
    if (served.has(request.routeOptions.url ?? '') && request.method !== 'OPTIONS') {
      void reply.header('vary', 'Origin');
      if (origin !== undefined && originAllowed(core, origin)) allow(reply, origin);
    }
    done();
  });
  for (const path of served) {
    app.options(path, async (request, reply) => {
      const origin = originOf(request);
      void reply.header('vary', 'Origin');
      if (origin === undefined || !originAllowed(core, origin)) {
        const refusal = forbidden('origin_not_allowed', `Origin ${origin ?? '(none)'} may not use ${path} from a browser; MCP_ALLOWED_ORIGINS lists the origins that may`);
        return sendError(request, reply, refusal);
      }
      allow(reply, origin);
      return reply
        .status(204)
        .header('access-control-allow-methods', 'GET, POST, DELETE')
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS))
        .send();
    });
  }
}
