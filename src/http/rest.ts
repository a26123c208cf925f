import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Core } from '../core.js';
import { badRequest } from '../errors.js';
import { OPERATIONS } from '../operations/index.js';
import { invokeOperation, type AnyOperation } from '../operations/operation.js';
import { notePrincipal } from './request-log.js';

/** The REST input of a call: path parameters plus the query (GET) or the JSON body (writes). The v2 gateway builds its document the same way. */
export function restInput(method: AnyOperation['method'], request: FastifyRequest): Record<string, unknown> {
  const params = request.params as Record<string, string>;
  if (method === 'GET') return { ...(request.query as Record<string, unknown>), ...params };
  const body = request.body ?? {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('invalid_body', 'The request body must be a JSON object', [
      { field: '(body)', rule: 'object', message: 'expected a JSON object' },
    ]);
  }
  return { ...(body as Record<string, unknown>), ...params };
}

export function registerRestRoutes(app: FastifyInstance, core: Core): void {
  for (const op of OPERATIONS) {
    app.route({
      method: op.method,
      url: op.path,
      handler: async (request, reply) => {
        const principal = await core.auth.authenticate(request.headers);
        notePrincipal(request, principal);
        const data = await invokeOperation(op, { core, principal, requestId: request.id }, restInput(op.method, request));
        return reply.status(op.successStatus).send({ ok: true, data, meta: { requestId: request.id } });
      },
    });
  }
}
