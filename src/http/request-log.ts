import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { requestSerializer } from './log-redaction.js';

/**
 * Fastify's request log, one line per request: its end at info, its arrival only at debug (where a
 * request that never ends shows). The end line is built here from the request serializer (method,
 * URL with secret query values masked, addresses; never headers), the status and the time, none of
 * which the redaction paths could match, so a child logger without them writes it: walking those
 * paths on every line was most of what logging cost (bench/RESULTS.md, "reference"). A request
 * that errored is logged with its error through the redacting logger.
 */
export class RequestLog extends LogController {
  private readonly lines: Logger;

  constructor(logger: Logger) {
    super();
    this.lines = logger.child({}, { redact: [] });
  }

  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const line = { reqId: request.id, req: requestSerializer(request), res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) request.log.error({ ...line, err: error }, 'request errored');
    else this.lines.info(line, 'request completed');
  }
}
