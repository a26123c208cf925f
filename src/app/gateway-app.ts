import proxy from '@fastify/http-proxy';
import type { FastifyInstance } from 'fastify';
import type { Capability, Role } from '../access/capabilities.js';
import type { GatewayDeps } from '../gateway/deps.js';
import { baseApp } from './base-app.js';
import { callUpstream } from '../kit/upstream.js';
import { shadowReportFor } from '../migration/operations/shadow-report.js';
import { httpV4Client } from '../gateway/http-v4-client.js';
import { registerV2Routes } from '../gateway/v2-routes.js';
import { upstreamFailure } from '../gateway/upstream-failure.js';
import type { V4Client } from '../gateway/v4-client.js';

/** Everything of the core but /v2, which the gateway serves itself. */
const PROXIED_PREFIXES = ['/v4', '/mcp', '/.well-known', '/api/oauth', '/app', '/openapi.json', '/openapi-v2.json', '/docs'];

/**
 * The gateway as its own process: /v2 translated to v4 calls over HTTP to the core, the rest
 * proxied to the core as is (streaming included). Its core reads legacy keys and records usage only.
 * `decorateV4` wraps each request's v4 client (the golden tests record the calls through it).
 */
export async function buildGatewayApp(
  core: GatewayDeps,
  upstreamUrl: string,
  decorateV4: (client: V4Client) => V4Client = (client) => client,
): Promise<FastifyInstance> {
  const app = baseApp(core);
  registerV2Routes(app, core, (requestId) => decorateV4(httpV4Client(core, upstreamUrl, requestId)));

  registerShadowReport(app, core, upstreamUrl);

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

const SHADOW_REPORT_PATH = '/v4/admin/shadow-report';

/**
 * The shadow check runs in this process, so its report is answered here rather than by the core,
 * whose check sees no v2 traffic. The core still authenticates the caller: GET /v4/me with the
 * caller's own credential says who it is; the core's refusal (401, say) is passed on as it came.
 */
function registerShadowReport(app: FastifyInstance, core: GatewayDeps, upstreamUrl: string): void {
  const base = upstreamUrl.replace(/\/+$/, '');
  const timeoutMs = core.config.legacyV2TimeoutMs;
  app.get(SHADOW_REPORT_PATH, async (request, reply) => {
    const credentials = Object.fromEntries(
      (['authorization', 'x-api-key'] as const).flatMap((name) => (typeof request.headers[name] === 'string' ? [[name, request.headers[name]]] : [])),
    );
    let me;
    try {
      me = await callUpstream(`${base}/v4/me`, { method: 'GET', headers: { ...credentials, 'x-request-id': request.id, accept: 'application/json' }, timeoutMs });
    } catch (error) {
      throw upstreamFailure(core, error, { kind: 'v4', name: 'The v4 core', call: 'GET /v4/me', timeoutMs });
    }
    if (me.status !== 200) return reply.status(me.status).type(me.contentType ?? 'application/json').send(me.text);
    const { user, companies, capabilities } = (
      JSON.parse(me.text) as { data: { user: { role: Role; nonPersonal?: boolean }; companies: { id: string }[]; capabilities: Capability[] } }
    ).data;
    // A core that does not say (older than the field) is taken as non-personal: the rule fails closed.
    const caller = { role: user.role, nonPersonal: user.nonPersonal !== false, companyIds: companies.map((c) => c.id), capabilities: new Set(capabilities) };
    const data = await shadowReportFor(core, caller);
    return { ok: true, data, meta: { requestId: request.id } };
  });
}
