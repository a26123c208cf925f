import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ConfigError, type Config } from '../kit/config.js';
import type { HttpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';
import { errorBody, toAppError } from './errors.js';

/** What /metrics reads: who may scrape, the registry, and where a failed scrape is logged. */
type MetricsDeps = Pick<HttpDeps, 'config' | 'logger' | 'metrics'>;

/*
 * Who reads /metrics. Its series carry no key or company, but they tell the traffic's shape and a
 * scrape costs a query (legacy keys per stage), so the API's callers do not get it:
 * - METRICS_TOKEN set: `Authorization: Bearer <token>` is required, compared in constant time (401 otherwise);
 * - METRICS_PORT set: /metrics is served on a listener of its own (METRICS_HOST, loopback by default), not on the API port;
 * - neither: the API port answers it to callers on this machine only, connected directly rather than
 *   through a proxy that says it forwards (403 otherwise), which is what the demo and a local Prometheus need.
 */

const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

const isLoopback = (address: string | undefined) =>
  address !== undefined && (address === '::1' || /^(::ffff:)?127\./.test(address));

const digest = (text: string) => createHash('sha256').update(text).digest();

function bearerMatches(authorization: string | undefined, token: string): boolean {
  const sent = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
  // Digests have one length, so the comparison takes the same time whatever was sent.
  return sent !== undefined && timingSafeEqual(digest(sent), digest(token));
}

/** Why this scrape is refused, or undefined when it may read the metrics. */
function metricsRefusal(config: Config, headers: IncomingHttpHeaders, remoteAddress: string | undefined): AppError | undefined {
  if (config.metricsToken !== undefined) {
    if (bearerMatches(headers.authorization, config.metricsToken)) return undefined;
    return new AppError(401, 'metrics_token_required', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
  }
  if (config.metricsPort !== undefined) return undefined;
  if (isLoopback(remoteAddress) && FORWARDING_HEADERS.every((name) => headers[name] === undefined)) return undefined;
  return new AppError(
    403,
    'metrics_loopback_only',
    '/metrics answers callers on this machine only: set METRICS_TOKEN (a bearer token for the scraper) or METRICS_PORT (a listener of its own) to scrape from elsewhere',
  );
}

const CHALLENGE = 'Bearer realm="metrics"';

/** /metrics on the API port, or on METRICS_PORT's listener for as long as the app runs. */
export function registerMetrics(app: FastifyInstance, core: MetricsDeps): void {
  const { config, metrics } = core;
  const { metricsHost, metricsPort } = config;
  if (metricsPort === undefined) {
    app.get('/metrics', async (request, reply) => {
      const refusal = metricsRefusal(config, request.headers, request.socket.remoteAddress);
      if (refusal) {
        if (refusal.status === 401) void reply.header('www-authenticate', CHALLENGE);
        throw refusal;
      }
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
    return;
  }
  let server: Server | undefined;
  app.addHook('onReady', async () => {
    server = await listenForMetrics(core, metricsHost, metricsPort);
  });
  app.addHook('onClose', async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  });
}

function sendError(res: ServerResponse, requestId: string, error: AppError): void {
  const challenge: Record<string, string> = error.status === 401 ? { 'www-authenticate': CHALLENGE } : {};
  res
    .writeHead(error.status, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, ...challenge })
    .end(JSON.stringify(errorBody(requestId, error)));
}

/** METRICS_PORT's listener: GET /metrics and nothing else, with the API's error envelope. */
async function answerScrape(core: MetricsDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = randomUUID();
  const path = (req.url ?? '/').split('?')[0];
  const refusal =
    req.method === 'GET' && path === '/metrics'
      ? metricsRefusal(core.config, req.headers, req.socket.remoteAddress)
      : new AppError(404, 'route_not_found', `No route ${req.method ?? ''} ${path}: this listener serves GET /metrics only`);
  if (refusal) return sendError(res, requestId, refusal);
  try {
    const body = await core.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': core.metrics.registry.contentType }).end(body);
  } catch (error) {
    core.logger.error({ err: error, reqId: requestId }, 'metrics scrape failed');
    sendError(res, requestId, toAppError(error));
  }
}

async function listenForMetrics(core: MetricsDeps, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => void answerScrape(core, req, res));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, resolve);
    });
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    throw new ConfigError(`Cannot listen on ${host}:${port} for /metrics (METRICS_HOST, METRICS_PORT): ${code === 'EADDRINUSE' ? 'another process is using it' : String(error)}`);
  }
  core.logger.info({ url: `http://${host}:${port}/metrics` }, 'metrics listener serving');
  return server;
}
