import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorObject, ServiceUnavailable } from '../kit/errors.js';
import { noteErrorCode } from './request-log.js';

/*
 * One answer to "what went wrong" for every surface (REST, v2, MCP, pages): our own errors as they
 * are, the framework's client errors (bad JSON, a body too large, a wrong media type) as the
 * client's with a clear code, and anything else as a 500 that blames no one and says where to look.
 */

export const BODY_LIMIT_BYTES = 1024 * 1024;

const FRAMEWORK_ERRORS: Readonly<Record<string, [code: string, message: string]>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_json', 'The request body is not valid JSON'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['invalid_json', 'The request body is empty but Content-Type is application/json'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['body_too_large', `The request body exceeds ${BODY_LIMIT_BYTES} bytes`],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type', 'Send the body as application/json'],
  FST_ERR_BAD_URL: ['invalid_url', 'The URL is not validly percent-encoded UTF-8'],
  FST_ERR_MAX_PARAM_LENGTH: ['path_segment_too_long', 'A path segment is longer than 100 characters'],
};

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const status = (error as Partial<FastifyError> | undefined)?.statusCode;
  if (error instanceof Error && status !== undefined && status >= 400 && status < 500) {
    const code = (error as FastifyError).code ?? 'bad_request';
    const [mapped, message] = Object.hasOwn(FRAMEWORK_ERRORS, code) ? FRAMEWORK_ERRORS[code]! : [code.toLowerCase(), error.message];
    return new AppError(status, mapped, message);
  }
  return new AppError(500, 'internal_error', 'Internal error; the request id identifies it in the service logs');
}

/** The v4 error envelope. */
export function errorBody(requestId: string, error: AppError) {
  return { ok: false as const, error: errorObject(error), meta: { requestId } };
}

/** Answers `error` in the v4 envelope; its code goes on the request's log line. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  noteErrorCode(request, error.code);
  return reply.status(error.status).send(errorBody(request.id, error));
}

/** How a surface answers a failure. */
export interface ErrorAnswer {
  /** Sends `error` in the surface's shape (the v4 envelope, v2's, a page), its code on the request's log line. */
  send(request: FastifyRequest, reply: FastifyReply, error: AppError): unknown;
  /** The log message of a fault of ours (a 5xx). */
  failed: string;
  /** The failure as an AppError: toAppError, unless the surface knows more (a page's form failing its schema). */
  read?: (error: unknown) => AppError;
}

/**
 * The error handler of every surface: the failure read as an AppError, a fault of ours logged with its
 * cause, Retry-After on a 503 that names its wait, and the answer in the surface's shape.
 */
export function errorHandler({ send, failed, read = toAppError }: ErrorAnswer) {
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void => {
    const appError = read(error);
    // A 501 is a documented answer (a v2 route without a v4 successor), not a fault of ours.
    if (appError.status === 501) request.log.info({ code: appError.code }, 'answered 501: not implemented by design');
    else if (appError.status >= 500) request.log.error({ err: error }, failed);
    if (appError instanceof ServiceUnavailable) void reply.header('retry-after', String(appError.retryAfterSeconds));
    void send(request, reply, appError);
  };
}

/** The handler of every v4 route: failures in the v4 envelope. */
export const answerV4Error = errorHandler({ send: sendError, failed: 'request failed' });
