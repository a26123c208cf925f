import proxy from '@fastify/http-proxy';
import type { FastifyInstance } from 'fastify';
import type { Core } from '../core.js';
import { baseApp } from '../http/app.js';
import { httpV4Client } from './http-v4-client.js';
import { registerV2Routes } from './v2-routes.js';
import type { V4Client } from './v4-client.js';

/** Everything of the core but /v2, which the gateway serves itself. */
const PROXIED_PREFIXES = ['/v4', '/mcp', '/.well-known', '/api/oauth', '/app', '/openapi.json', '/docs'];

/**
 * The gateway as its own process: /v2 translated to v4 calls over HTTP to the core, the rest
 * proxied to the core as is (streaming included). Its core reads legacy keys and records usage only.
 * `decorateV4` wraps each request's v4 client (the golden tests record the calls through it).
 */
export async function buildGatewayApp(
  core: Core,
  upstreamUrl: string,
  decorateV4: (client: V4Client) => V4Client = (client) => client,
): Promise<FastifyInstance> {
  const app = baseApp(core);
  registerV2Routes(app, core, (requestId) => decorateV4(httpV4Client(core, upstreamUrl, requestId)));

  // baseApp refuses legacy keys on these paths before proxying, so one never reaches the core through the gateway.
  for (const prefix of PROXIED_PREFIXES) {
    await app.register(proxy, {
      upstream: upstreamUrl,
      prefix,
      rewritePrefix: prefix,
      replyOptions: {
        // One request id across both processes; other headers (Mcp-Session-Id included) pass both ways untouched.
        rewriteRequestHeaders: (request, headers) => ({ ...headers, 'x-request-id': request.id }),
      },
    });
  }
  return app;
}
