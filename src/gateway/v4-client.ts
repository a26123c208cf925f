import type { Core } from '../core.js';
import { AppError } from '../errors.js';
import { domainOperationByName } from '../operations/domain-table.js';
import { invokeOperation } from '../operations/operation.js';

/** The v4 envelope without its meta: what the gateway reads of a v4 answer. */
export type V4Envelope =
  | { ok: true; data: unknown }
  | { ok: false; error: { code: string; message: string; details?: unknown } };

/**
 * How the gateway reaches v4. In-process when it runs inside the service; an HTTP client for the
 * separate-process deployment implements the same interface.
 */
export interface V4Client {
  call(operation: string, input: Record<string, unknown>, apiKey: string): Promise<{ status: number; body: V4Envelope }>;
}

function failure(error: AppError): { status: number; body: V4Envelope } {
  const { status, code, message, details } = error;
  return { status, body: { ok: false, error: { code, message, ...(details === undefined ? {} : { details }) } } };
}

/** Authenticates the key and invokes the operation exactly as the v4 REST layer does, errors included. */
export function inProcessV4Client(core: Core, requestId: string): V4Client {
  return {
    async call(operation, input, apiKey) {
      const op = domainOperationByName(operation);
      // The maps were checked against the operation table at start, so this is our fault, not the caller's.
      if (!op) throw new Error(`v4 operation ${operation} is not in the operation table`);
      try {
        const principal = await core.auth.authenticate({ 'x-api-key': apiKey });
        const data = await invokeOperation(op, { core, principal, requestId }, input);
        return { status: op.successStatus, body: { ok: true, data } };
      } catch (error) {
        if (error instanceof AppError) return failure(error);
        throw error;
      }
    },
  };
}
