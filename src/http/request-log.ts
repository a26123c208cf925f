import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/**
 * Fastify's request log, one line per request: its end at info, its arrival only at debug (where a
 * request that never ends shows). The end line holds what the request serializer keeps (method,
 * URL with secret query values masked, addresses), the status and the time, none of which the
 * redaction paths could match, so a child logger without them writes it: walking those paths on
 * every line was most of what logging cost (bench/RESULTS.md, "reference"). A request that
 * errored is logged with its error through the redacting logger.
 */
export class RequestLog extends LogController {
  private readonly lines: Logger;

  constructor(logger: Logger) {
    super();
    this.lines = logger.child({}, { redact: [] });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) request.log.error({ ...line, err: error }, 'request errored');
    else this.lines.info(line, 'request completed');
  }
}
