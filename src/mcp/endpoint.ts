import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { McpDeps } from './deps.js';
import { ServiceUnavailable } from '../kit/errors.js';
import { loadAfterListen, loadOnce } from '../kit/load-once.js';
import { registerCors } from '../http/cors.js';
import { toAppError } from '../http/errors.js';
import { OAUTH_PATHS } from '../oauth/provider.js';
import { createAdmission, type Admitted } from './admission.js';
import { DISCOVERY_PATHS, MCP_PATH, registerProtectedResourceMetadata } from './discovery.js';
import { registerIcons } from './icons.js';
import { PARSE_ERROR, refuse } from './json-rpc.js';
import { MCP_BODY_LIMIT_BYTES } from './limits.js';
import { createMcpMetrics } from './metrics.js';

/*
 * The MCP endpoint, /mcp: admission first (admission.ts), then each request to its revision's leg
 * (legs.ts). The legs stand on the two SDKs, whose modules load once the port is open: the instance
 * is ready sooner, and a request that comes first waits for them.
 */

export async function registerMcp(app: FastifyInstance, core: McpDeps): Promise<void> {
  // Before the routes it serves: a browser client reads the endpoint and the discovery documents across
  // origins, and registers itself (oidc-provider answers CORS on its other endpoints, not on registration).
  registerCors(app, core, [MCP_PATH, ...DISCOVERY_PATHS, OAUTH_PATHS.registration]);
  registerProtectedResourceMetadata(app, core);
  registerIcons(app);

  const metrics = createMcpMetrics(core.metrics.registry);
  const admission = createAdmission(core, metrics);
  const legs = loadOnce(async () => (await import('./legs.js')).createLegs(core, metrics, admission));
  loadAfterListen(app, core.logger, 'The MCP endpoint’s SDK modules', legs);
  app.addHook('preClose', async () => {
    const loaded = await legs.started?.catch(() => undefined);
    await loaded?.close();
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
        const letThrough = await admission.admit(request, reply);
        if (!letThrough) return reply;
        admitted.set(request, letThrough);
        return undefined;
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    handler: async (request, reply) => {
      try {
        return await (await legs()).route(request, reply, admitted.get(request)!);
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    errorHandler: unreadableBody,
  });
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
