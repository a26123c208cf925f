import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayDeps } from '../gateway/deps.js';
import { AppError } from '../kit/errors.js';
import { answerV2Error } from '../gateway/v2-routes.js';
import { refuseLegacyKeysOnV4 } from '../gateway/legacy-key-guard.js';
import { isDraining } from '../http/drain.js';
import { readiness } from '../http/health.js';
import { registerMetrics } from '../http/metrics-route.js';
import { answerV4Error, BODY_LIMIT_BYTES, errorBody, sendError } from '../http/errors.js';
import { decorateRequestLog, LazyRequestLogger, noteErrorCode, RequestLog } from '../http/request-log.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The frame every deployment shares: request ids, the v4 error shape, /healthz and /metrics. */
export function baseApp(core: GatewayDeps): FastifyInstance {
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
      const { prefix } = core.mappings.sunset;
      const v2 = prefix !== '' && request.url.startsWith(`${prefix}/`);
      (v2 ? answerV2Error : answerV4Error)(error, request, reply);
    },
    // On close, idle keep-alive connections go at once; busy ones finish their request first.
    forceCloseConnections: 'idle',
    logController: new RequestLog(core.logger),
    childLoggerFactory: (logger, bindings, options) => new LazyRequestLogger(logger as Logger, bindings, options),
    trustProxy: core.config.trustProxy,
  });

  decorateRequestLog(app);
  // Every request passes these hooks: callback style, so none costs a promise and a microtask.
  const refuseLegacyKey = refuseLegacyKeysOnV4(core);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done(refuseLegacyKey(request, reply));
  });
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the URL: ids in paths would explode the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    core.metrics.http.recordRequest({ route, method: request.method, status: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler(answerV4Error);

  app.setNotFoundHandler((request, reply) => {
    void sendError(request, reply, new AppError(404, 'route_not_found', `No route ${request.method} ${request.url.split('?')[0]}`));
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (request, reply) => {
    if (isDraining(app.server)) {
      const stopping = new AppError(503, 'draining', 'Draining before a stop: still serving, but send new requests elsewhere');
      noteErrorCode(request, stopping.code);
      return reply.status(503).send({ ...errorBody(request.id, stopping), status: 'draining' });
    }
    const { status, checks, degraded } = await readiness(core);
    if (status === 'ready') return { ok: true, status, checks };
    // Degraded still serves: a balancer must keep the instance (see Readiness).
    if (status === 'degraded') return { ok: true, status, checks, degraded };
    const notReady = new AppError(503, 'not_ready', 'Not ready: database down');
    noteErrorCode(request, notReady.code);
    return reply.status(503).send({ ...errorBody(request.id, notReady), status, checks });
  });
  registerMetrics(app, core);
  return app;
}
