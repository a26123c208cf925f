import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Core } from '../core.js';
import { AppError, ServiceUnavailable } from '../errors.js';
import { registerRestRoutes } from './rest.js';
import { registerDocs } from './openapi.js';
import { registerV2Routes, v2ErrorBody } from '../gateway/v2-routes.js';
import { refuseLegacyKeysOnV4 } from '../gateway/legacy-key-guard.js';
import { registerCutover } from '../gateway/cutover.js';
import { registerOAuthRoutes } from '../oauth/routes.js';
import { registerPages } from '../pages/index.js';
import { registerMcp } from '../mcp/endpoint.js';
import { readiness } from './health.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
export const BODY_LIMIT_BYTES = 1024 * 1024;

export function errorBody(requestId: string, code: string, message: string, details?: unknown) {
  return { ok: false as const, error: { code, message, ...(details === undefined ? {} : { details }) }, meta: { requestId } };
}

/** Maps framework errors (bad JSON, body too large, wrong content type) to our codes; never blames the client for a fault of ours. */
function toAppError(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const code = (error as FastifyError).code ?? 'bad_request';
    const friendly: Record<string, [string, string]> = {
      FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_json', 'The request body is not valid JSON'],
      FST_ERR_CTP_EMPTY_JSON_BODY: ['invalid_json', 'The request body is empty but Content-Type is application/json'],
      FST_ERR_CTP_BODY_TOO_LARGE: ['body_too_large', `The request body exceeds ${BODY_LIMIT_BYTES} bytes`],
      FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type', 'Send the body as application/json'],
      FST_ERR_BAD_URL: ['invalid_url', 'The URL is not validly percent-encoded UTF-8'],
      FST_ERR_MAX_PARAM_LENGTH: ['path_segment_too_long', 'A path segment is longer than 100 characters'],
    };
    const [mapped, message] = friendly[code] ?? [code.toLowerCase(), error.message];
    return new AppError(status, mapped, message);
  }
  return new AppError(500, 'internal_error', 'Internal error; the request id identifies it in the service logs');
}

/** The frame every deployment shares: request ids, the v4 error shape, /healthz and /metrics. */
export function baseApp(core: Core): FastifyInstance {
  const app = Fastify({
    loggerInstance: core.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    ajv: { customOptions: { removeAdditional: false } },
    // A malformed URL or an over-long path segment fails before routing: answered in the shape of the API addressed.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const appError = toAppError(error);
      const { prefix } = core.mappings.sunset;
      const v2 = prefix !== '' && request.url.startsWith(`${prefix}/`);
      void reply.status(appError.status).send(v2 ? v2ErrorBody(appError) : errorBody(request.id, appError.code, appError.message));
    },
    // On close, idle keep-alive connections go at once; busy ones finish their request first.
    forceCloseConnections: 'idle',
    trustProxy: core.config.trustProxy,
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onRequest', refuseLegacyKeysOnV4(core));
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the URL: ids in paths would explode the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    core.metrics.http.recordRequest({ route, method: request.method, status: reply.statusCode }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500) request.log.error({ err: error }, 'request failed');
    if (appError instanceof ServiceUnavailable) void reply.header('retry-after', String(appError.retryAfterSeconds));
    void reply.status(appError.status).send(errorBody(request.id, appError.code, appError.message, appError.details));
  });

  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .send(errorBody(request.id, 'route_not_found', `No route ${request.method} ${request.url.split('?')[0]}`));
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (request, reply) => {
    const { ready, checks } = await readiness(core);
    if (ready) return { ok: true, checks };
    const down = Object.entries(checks).filter(([, state]) => state === 'down').map(([name]) => name);
    return reply.status(503).send({ ...errorBody(request.id, 'not_ready', `Not ready: ${down.join(' and ')} down`), checks });
  });
  // Unauthenticated like most Prometheus scrape targets: aggregate counters only, no key or company labels.
  app.get('/metrics', async (_request, reply) =>
    reply.type(core.metrics.registry.contentType).send(await core.metrics.registry.metrics()),
  );
  return app;
}

/** Builds the whole HTTP service on a core; never listens (the caller decides). */
export async function buildApp(core: Core): Promise<FastifyInstance> {
  const app = baseApp(core);
  registerRestRoutes(app, core);
  registerV2Routes(app, core);
  await registerMcp(app, core);
  await registerOAuthRoutes(app, core);
  await registerPages(app, core);
  await registerDocs(app, core);
  registerCutover(app, core);
  return app;
}
