import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { McpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';
import { originAllowed } from '../http/cors.js';
import { notePrincipal } from '../http/request-log.js';
import { isOAuthScope } from '../oauth/scopes.js';
import { bearerChallenge } from './discovery.js';
import { inFlightLimit, type Release } from './in-flight.js';
import { refuse } from './json-rpc.js';
import { MCP_IN_FLIGHT_PER_CREDENTIAL } from './limits.js';
import type { McpMetrics } from './metrics.js';
import { header } from './revisions.js';
import { principalBinding } from './sessions.js';
import { canCall, toolOperation } from './tools.js';

/*
 * Who may reach the MCP endpoint, before any revision's code runs: the Origin, the credential (a 401
 * with the Bearer challenge), the credential's places in flight, and an OAuth grant's scope for the
 * tool it calls (a 403 with the step-up challenge).
 */

/** What admission established for a request it let through. */
export interface Admitted {
  principal: Principal;
  /** Gives back the request's place in flight. */
  release: Release;
}

export interface Admission {
  /** Refuses the request (the answer is sent) or answers its principal and place in flight. */
  admit(request: FastifyRequest, reply: FastifyReply): Promise<Admitted | undefined>;
  /**
   * An OAuth connection calling a tool its grant lacks is refused at the HTTP level with a step-up
   * challenge (true when the refusal was sent); API keys get an ordinary tool error instead.
   */
  refusedForScope(reply: FastifyReply, principal: Principal, request: JSONRPCRequest): boolean;
}

export function createAdmission(core: McpDeps, metrics: McpMetrics): Admission {
  const inFlight = inFlightLimit(core.metrics.registry, MCP_IN_FLIGHT_PER_CREDENTIAL);

  async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<Principal | undefined> {
    try {
      const principal = await core.auth.authenticate(request.headers, 'mcp');
      notePrincipal(request, principal);
      return principal;
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 401) throw error;
      const challenge = header(request, 'authorization') === undefined ? undefined : 'invalid_token';
      void reply.header('www-authenticate', bearerChallenge(core, request, { error: challenge }));
      void refuse(reply, 401, error.code, error.message);
      return undefined;
    }
  }

  return {
    async admit(request, reply) {
      // DNS rebinding defence: a browser page may reach /mcp only from an allowed origin.
      if (!originAllowed(core, header(request, 'origin'))) {
        void refuse(reply, 403, 'origin_not_allowed', `Origin ${header(request, 'origin')} may not use this MCP endpoint`);
        return undefined;
      }
      const principal = await authenticate(request, reply);
      if (!principal) return undefined;
      const release = inFlight.enter(principalBinding(principal), reply);
      if (!release) {
        core.metrics.http.recordRateLimited('mcp_in_flight');
        void reply.header('retry-after', '1');
        const message = `Too many MCP requests in flight for this credential (at most ${MCP_IN_FLIGHT_PER_CREDENTIAL}); retry when one is answered`;
        void refuse(reply, 429, 'rate_limited', message);
        return undefined;
      }
      return { principal, release };
    },

    refusedForScope(reply, principal, request) {
      if (principal.credential.kind !== 'oauth') return false;
      const op = calledTool(request);
      // What OAuth never grants is an ordinary tool error instead.
      if (!op?.capability || canCall(principal, op) || !isOAuthScope(op.capability)) return false;
      metrics.recordToolCall(op.name, 'insufficient_scope');
      const scope = op.capability;
      const wanted = [...new Set([...principal.credential.scopes, scope])];
      void reply.header('www-authenticate', bearerChallenge(core, reply.request, { error: 'insufficient_scope', scope: wanted }));
      void refuse(reply, 403, 'insufficient_scope', `This connection lacks ${scope}; authorize it again with that scope`);
      return true;
    },
  };
}

/** The tool a tools/call names; undefined for any other request, or a name that is not a string. */
export function calledTool(request: JSONRPCRequest) {
  const name = request.method === 'tools/call' ? request.params?.name : undefined;
  return typeof name === 'string' ? toolOperation(name) : undefined;
}
