import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Bindings, type ChildLoggerOptions, type Level, type LogFn, type Logger } from 'pino';
import type { Principal } from '../access/principal.js';
import { requestSerializer } from './log-redaction.js';

/**
 * Who made a request, on its completion line: ids only, never a credential. A key id is the public
 * part of a v4 key (`svc_sk_<id>_…`); a legacy key id is the gateway's record of a v2 key.
 */
export interface LoggedCaller {
  userId?: string;
  companyIds?: readonly string[];
  apiKeyId?: string;
  legacyKeyId?: string;
  oauthClientId?: string;
}

// Null until known; undefined on the bare request Fastify makes for a URL it refuses before routing.
declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the caller is known (noteCaller). */
    loggedCaller?: LoggedCaller | null;
    /** The code of the error the request is answered with (noteErrorCode). */
    loggedErrorCode?: string | null;
  }
}

/** Gives every request of `app` the fields its completion line reads, empty: set later, they keep the request's shape. */
export function decorateRequestLog(app: FastifyInstance): void {
  app.decorateRequest('loggedCaller', null);
  app.decorateRequest('loggedErrorCode', null);
}

export function noteCaller(request: FastifyRequest, caller: LoggedCaller): void {
  request.loggedCaller = caller;
}

/** The principal's user, companies and key or OAuth client, for the completion line (JSON leaves out what is undefined). */
export function notePrincipal(request: FastifyRequest, principal: Principal): void {
  const { credential } = principal;
  noteCaller(request, {
    userId: principal.userId,
    companyIds: principal.companyIds,
    apiKeyId: credential.kind === 'api_key' ? credential.keyId : undefined,
    oauthClientId: credential.kind === 'oauth' ? credential.clientId : undefined,
  });
}

/** The error code of the answer (the envelope's `error.code`), for the completion line. */
export function noteErrorCode(request: FastifyRequest, code: string): void {
  request.loggedErrorCode = code;
}

/** The line's account of the answer: its status and, for an error answer, its code. */
const responseOf = (request: FastifyRequest, reply: FastifyReply) => ({ statusCode: reply.statusCode, errorCode: request.loggedErrorCode ?? undefined });

const { chindingsSym, streamSym, timeSym } = pino.symbols;

/** What pino starts every line of `logger` with (level, time, its bindings), and where it writes them. */
function lineParts(logger: Logger) {
  const internals = logger as unknown as Record<symbol, unknown>;
  return {
    time: internals[timeSym] as () => string,
    bindings: () => internals[chindingsSym] as string,
    stream: internals[streamSym] as { write(line: string): void },
  };
}

/**
 * Fastify's request log, one line per request: its end at info, its arrival only at debug (where a
 * request that never ends shows). The end line holds the request serializer's fields (method, URL
 * with secret query values masked, addresses; never headers), the status and an error answer's code,
 * the caller's ids (never a credential) and the time, none of which a redaction path could match: it
 * is written as JSON straight to the logger's stream, in the format pino writes, without pino's
 * generic per-line path (serializers, merging the line object), which is most of what a line costs
 * (the `profile` benchmark, bench/RESULTS.md). A request that errored is logged with its error through
 * the redacting logger.
 */
export class RequestLog extends LogController {
  private readonly parts: ReturnType<typeof lineParts>;
  private readonly infoLevel: number;

  constructor(private readonly logger: Logger) {
    super();
    this.parts = lineParts(logger);
    this.infoLevel = logger.levels.values.info!;
  }

  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) {
      request.log.error(
        { req: request, res: responseOf(request, reply), caller: request.loggedCaller ?? undefined, responseTime: reply.elapsedTime, err: error },
        'request errored',
      );
      return;
    }
    if (!this.logger.isLevelEnabled('info')) return;
    const { time, bindings, stream } = this.parts;
    const caller = request.loggedCaller ? `,"caller":${JSON.stringify(request.loggedCaller)}` : '';
    const errorCode = request.loggedErrorCode ? `,"errorCode":${JSON.stringify(request.loggedErrorCode)}` : '';
    stream.write(
      `{"level":${this.infoLevel}${time()}${bindings()},"reqId":${JSON.stringify(request.id)},` +
        `"req":${JSON.stringify(requestSerializer(request))},"res":{"statusCode":${reply.statusCode}${errorCode}}${caller},` +
        `"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`,
    );
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const satisfies readonly Level[];

/**
 * request.log, made on first use. Fastify gives every request a child logger, and a pino child walks
 * the redaction paths over its bindings when it is made; most requests never log through theirs (the
 * request line above does not), so the child is made only when a line at an enabled level needs it.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  // One method per level, defined on the prototype below.
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.instance().level = level;
  }

  private instance(): Logger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  /** A line at `level`, through the child (made now if the level is enabled). */
  logAt(level: Level, args: Parameters<LogFn>): void {
    if ((this.made ?? this.parent).isLevelEnabled(level)) (this.instance()[level] as (...line: Parameters<LogFn>) => void)(...args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.instance().child(bindings, options);
  }
}

for (const level of LOG_LEVELS) {
  LazyRequestLogger.prototype[level] = function (this: LazyRequestLogger, ...args: Parameters<LogFn>) {
    this.logAt(level, args);
  } as LogFn;
}
