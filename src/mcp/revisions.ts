import type { FastifyRequest } from 'fastify';

/*
 * What the endpoint knows of protocol revisions before it loads an SDK: the ones it serves, and the
 * headers a request names them with.
 */

/** The session revisions (SDK v1's server), newest first: the first is offered when a client asks for another. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

/** The sessionless revisions (SDK v2's server). */
export const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;

/** A request header's first value (Node gives a repeated one as a list). */
export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
