import type { FastifyReply } from 'fastify';
import { noteErrorCode } from '../http/request-log.js';

/*
 * The endpoint's own JSON-RPC answers: refusals at the HTTP level, as the SDK's transport words them.
 * Free of the SDKs, so that admission can refuse before they are loaded (messages.ts reads bodies).
 */

/** JSON-RPC error codes the SDK's transport uses for HTTP-level refusals. */
export const SERVER_ERROR = -32000;
export const SESSION_NOT_FOUND = -32001;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
export const PARSE_ERROR = -32700;

/** The id of a body that is one JSON-RPC request; null for a batch, a notification or no body (JSON-RPC 2.0 §5). */
function requestIdOf(body: unknown): string | number | null {
  const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/**
 * An HTTP-level refusal as a JSON-RPC error, answering the request's own id when it has one. The
 * service's error code is sent in `data.code` and goes on the request's log line.
 */
export function refuse(reply: FastifyReply, status: number, errorCode: string, message: string, code = SERVER_ERROR): FastifyReply {
  noteErrorCode(reply.request, errorCode);
  return reply
    .status(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', id: requestIdOf(reply.request.body), error: { code, message, data: { code: errorCode } } });
}

/** A JSON-RPC error answer to one request, as JSON text (a batch's element, or a POST's whole body). */
export const errorAnswer = (id: string | number | null, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
