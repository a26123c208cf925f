import type { FastifyReply } from 'fastify';

/**
 * Hands the raw response to a library that writes it itself (the MCP SDK, oidc-provider), keeping the
 * headers hooks set on the reply (CORS, deprecation), which a hijacked reply would no longer send.
 */
export function hijackKeepingHeaders(reply: FastifyReply): void {
  reply.hijack();
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
}
