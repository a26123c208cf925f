import type { FastifyReply, FastifyRequest } from 'fastify';
import type { McpDeps } from './deps.js';
import type { Admission, Admitted } from './admission.js';
import { refuse } from './json-rpc.js';
import { isRequest, parseBody } from './messages.js';
import type { McpMetrics } from './metrics.js';
import { createModernLeg, modernRoute, type ModernLeg } from './modern.js';
import { header, MODERN_PROTOCOL_VERSIONS, PROTOCOL_VERSIONS } from './revisions.js';
import { createSessionLeg, type SessionLeg } from './session-leg.js';

/*
 * The revisions' legs, on the SDKs: the sessionless 2026-07-28 one (modern.ts) and the session
 * revisions' (session-leg.ts), and which of them an admitted request goes to.
 */

export interface Legs {
  /** An admitted request to its revision's leg, by method, MCP-Protocol-Version and the body's `_meta` claim. */
  route(request: FastifyRequest, reply: FastifyReply, admitted: Admitted): Promise<FastifyReply>;
  close(): Promise<void>;
}

export function createLegs(core: McpDeps, metrics: McpMetrics, admission: Admission): Legs {
  const modern = createModernLeg(core, metrics);
  const sessions = createSessionLeg(core, metrics, admission);
  return {
    route: (request, reply, admitted) => route({ admission, modern, sessions }, request, reply, admitted),
    async close() {
      sessions.close();
      await modern.close();
    },
  };
}

async function route(
  legs: { admission: Admission; modern: ModernLeg; sessions: SessionLeg },
  request: FastifyRequest,
  reply: FastifyReply,
  admitted: Admitted,
): Promise<FastifyReply> {
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
