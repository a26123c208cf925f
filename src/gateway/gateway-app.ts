import proxy from '@fastify/http-proxy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { API_KEY_PREFIX } from '../access/api-keys.js';
import { NOT_USER_BOUND_MESSAGE } from '../access/authenticate.js';
import type { Core } from '../core.js';
import { unauthorized } from '../errors.js';
import { baseApp } from '../http/app.js';
import { httpV4Client } from './http-v4-client.js';
import { registerV2Routes } from './v2-routes.js';

/** Everything of the core but /v2, which the gateway serves itself. */
const PROXIED_PREFIXES = ['/v4', '/mcp', '/.well-known', '/api/oauth', '/openapi.json', '/docs'];

/**
 * The gateway as its own process: /v2 translated to v4 calls over HTTP to the core, the rest
 * proxied to the core as is (streaming included). Its core reads legacy keys and records usage only.
 */
export async function buildGatewayApp(core: Core, upstreamUrl: string): Promise<FastifyInstance> {
  const app = baseApp(core);
  registerV2Routes(app, core, (requestId) => httpV4Client(core, upstreamUrl, requestId));

  // Refused here as the core would refuse it, so a legacy key never reaches the core through the gateway.
  const refuseLegacyKey = async (request: FastifyRequest) => {
    const key = request.headers['x-api-key'];
    if (typeof key === 'string' && key !== '' && !key.startsWith(API_KEY_PREFIX)) {
      core.metrics.gateway.recordLegacyKeyRejected('rest');
      throw unauthorized('api_key_not_user_bound', NOT_USER_BOUND_MESSAGE);
    }
  };
  for (const prefix of PROXIED_PREFIXES) {
    await app.register(proxy, {
      upstream: upstreamUrl,
      prefix,
      rewritePrefix: prefix,
      preHandler: refuseLegacyKey,
      replyOptions: {
        // One request id across both processes; other headers (Mcp-Session-Id included) pass both ways untouched.
        rewriteRequestHeaders: (request, headers) => ({ ...headers, 'x-request-id': request.id }),
      },
    });
  }
  return app;
}
