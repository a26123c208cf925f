import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { McpDeps } from './deps.js';
import { ServiceUnavailable } from '../kit/errors.js';
import { registerCors } from '../http/cors.js';
import { toAppError } from '../http/errors.js';
import { OAUTH_PATHS } from '../oauth/provider.js';
import { createAdmission, type Admission, type Admitted } from './admission.js';
import { DISCOVERY_PATHS, MCP_PATH, registerProtectedResourceMetadata } from './discovery.js';
import { registerIcons } from './icons.js';
import { isRequest, parseBody, PARSE_ERROR, refuse } from './json-rpc.js';
import { MCP_BODY_LIMIT_BYTES } from './limits.js';
import { createMcpMetrics } from './metrics.js';
import { createModernLeg, header, modernRoute, MODERN_PROTOCOL_VERSIONS, type ModernLeg } from './modern.js';
import { PROTOCOL_VERSIONS } from './server.js';
import { createSessionLeg, type SessionLeg } from './session-leg.js';

/*
 * The MCP endpoint, /mcp: admission first (admission.ts), then each request to its revision's leg,
 * the sessionless 2026-07-28 one (modern.ts) or the session revisions' (session-leg.ts).
 */

export async function registerMcp(app: FastifyInstance, core: McpDeps): Promise<void> {
  // Before the routes it serves: a browser client reads the endpoint and the discovery documents across
  // origins, and registers itself (oidc-provider answers CORS on its other endpoints, not on registration).
  registerCors(app, core, [MCP_PATH, ...DISCOVERY_PATHS, OAUTH_PATHS.registration]);
  registerProtectedResourceMetadata(app, core);
  registerIcons(app);

  const metrics = createMcpMetrics(core.metrics.registry);
  const admission = createAdmission(core, metrics);
  const legs: Legs = { admission, modern: createModernLeg(core, metrics), sessions: createSessionLeg(core, metrics, admission) };
  app.addHook('preClose', async () => {
    legs.sessions.close();
    await legs.modern.close();
  });

  /** What admission established for a request it let through. */
  const admitted = new WeakMap<FastifyRequest, Admitted>();
  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    bodyLimit: MCP_BODY_LIMIT_BYTES,
    // Origin, credential and the credential's places in flight, before the body is read: a refused
    // request costs no parse, and the places count credentials as authentication knows them.
    onRequest: async (request, reply) => {
      try {
        const letThrough = await legs.admission.admit(request, reply);
        if (!letThrough) return reply;
        admitted.set(request, letThrough);
        return undefined;
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    handler: async (request, reply) => {
      try {
        return await route(legs, request, reply, admitted.get(request)!);
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    errorHandler: unreadableBody,
  });
}

interface Legs {
  admission: Admission;
  modern: ModernLeg;
  sessions: SessionLeg;
}

/** Sessions unreachable while Redis reconnects (or another dependency down): a JSON-RPC refusal to retry. */
function unavailable(reply: FastifyReply, error: unknown): FastifyReply {
  if (!(error instanceof ServiceUnavailable) || reply.sent) throw error;
  void reply.header('retry-after', String(error.retryAfterSeconds));
  return refuse(reply, 503, error.code, error.message);
}

/**
 * A body Fastify could not read (malformed, __proto__, too large, not JSON) answers in JSON-RPC, as
 * every other refusal of this endpoint does; anything else goes on to the app's handler.
 */
function unreadableBody(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (!error.code?.startsWith('FST_ERR_CTP_') || (error.statusCode ?? 500) >= 500) throw error;
  const why = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? `it is larger than the MCP endpoint's limit of ${MCP_BODY_LIMIT_BYTES} bytes` : error.message;
  return refuse(reply, error.statusCode!, toAppError(error).code, `The body could not be read as JSON-RPC: ${why}`, PARSE_ERROR);
}

/** An admitted request to its revision's leg, by method, MCP-Protocol-Version and the body's `_meta` claim. */
async function route(legs: Legs, request: FastifyRequest, reply: FastifyReply, admitted: Admitted): Promise<FastifyReply> {
  const { principal } = admitted;
  if (request.method === 'GET') {
    // No server-initiated messages outside a request: the spec lets us decline the GET stream.
    return refuse(reply.header('allow', 'POST, DELETE'), 405, 'method_not_allowed', 'This server offers no GET stream; POST JSON-RPC messages');
  }
  const protocolVersion = header(request, 'mcp-protocol-version');
  const modern = request.method === 'POST' ? modernRoute(request) : undefined;
  if (modern) {
    // Only an OAuth grant can be stepped up; an API key's call needs no second parse of the body.
    const message = principal.credential.kind === 'oauth' ? parseBody(request.body) : undefined;
    if (message && isRequest(message) && legs.admission.refusedForScope(reply, principal, message)) return reply;
    return legs.modern.serve(request, reply, principal, modern);
  }
  if (protocolVersion !== undefined && (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
    return refuse(reply.header('allow', 'POST'), 405, 'method_not_allowed', `The ${protocolVersion} revision has no sessions: POST each request with its _meta`);
  }
  // A served version other than the session's is no refusal (the SDK's transport accepts it too, and
  // clients in the field send one): the session's revision, negotiated at initialize, governs.
  if (protocolVersion !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
    // Deliberately not the 2026-07-28 error (-32022): a dual-era client falls back to initialize on this one.
    return refuse(reply, 400, 'unsupported_protocol_version', `Unsupported MCP-Protocol-Version ${protocolVersion}; supported: ${[...MODERN_PROTOCOL_VERSIONS, ...PROTOCOL_VERSIONS].join(', ')}`);
  }
  return request.method === 'DELETE' ? legs.sessions.delete(request, reply, principal) : legs.sessions.post(request, reply, admitted);
}
