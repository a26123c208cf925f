import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HttpDeps } from './deps.js';
import { badRequest } from '../kit/errors.js';
import { invokeOperation, requireAccess, type AnyOperation } from '../operations/operation.js';
import { fingerprintOf, idempotencyKeyOf, IdempotentWrites } from './idempotency.js';
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

/** One route per operation of `operations` (the composition root passes the whole table). */
export function registerRestRoutes(app: FastifyInstance, core: HttpDeps, operations: readonly AnyOperation[]): void {
  const idempotent = new IdempotentWrites(core);
  for (const op of operations) {
    app.route({
      method: op.method,
      url: op.path,
      handler: async (request, reply) => {
        const principal = await core.auth.authenticate(request.headers);
        notePrincipal(request, principal);
        const input = restInput(op.method, request);
        const answer = async (on: HttpDeps) => {
          const data = await invokeOperation(op, { core: on, principal, requestId: request.id }, input);
          return { status: op.successStatus, body: { ok: true, data, meta: { requestId: request.id } } };
        };
        // Reads ignore the header: repeating one is harmless already.
        const key = op.method === 'GET' ? undefined : idempotencyKeyOf(request);
        if (key === undefined) {
          const { status, body } = await answer(core);
          return reply.status(status).send(body);
        }
        // Checked before a replay too: a credential or role narrowed since gets no stored answer.
        requireAccess(principal, op, op.name);
        const done = await idempotent.run(principal.userId, key, fingerprintOf(op.name, input), answer);
        if (done.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.status(done.status).send(done.body);
      },
    });
  }
}
