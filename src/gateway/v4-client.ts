import type { GatewayDeps } from './deps.js';
import type { HttpDeps } from '../http/deps.js';
import type { Principal } from '../access/principal.js';
import { AppError, errorObject, type ErrorObject } from '../kit/errors.js';
import { domainOperationByName } from '../operations/domain-table.js';
import { invokeOperation } from '../operations/operation.js';
import { TopicCache, type Freshness } from '../store/change-feed.js';

/** The v4 envelope without its meta: what the gateway reads of a v4 answer. */
export type V4Envelope =
  | { ok: true; data: unknown }
  | { ok: false; error: ErrorObject };

/**
 * How the gateway reaches v4. In-process when it runs inside the service; an HTTP client for the
 * separate-process deployment implements the same interface. `apiKey` is a legacy key's bridge key,
 * read from the database: never a key a caller sent.
 */
export interface V4Client {
  call(operation: string, input: Record<string, unknown>, apiKey: string): Promise<{ status: number; body: V4Envelope }>;
}

/** The client of one v2 request, which trusts a credential it finds cached as its `freshness` says. */
export type V4ClientFor = (requestId: string, freshness: Freshness) => V4Client;

function failure(error: AppError): { status: number; body: V4Envelope } {
  return { status: error.status, body: { ok: false, error: errorObject(error) } };
}

/**
 * The in-process client of each request: every call is authenticated and invoked exactly as the v4
 * REST layer does, errors included. A bridge key's principal is kept until credentials change, as the
 * authenticator keeps its key's: a profile of a v2 read showed the second authentication (hash,
 * constant-time compare) among the largest costs v2 adds. Only a success is kept, so a
 * revoked bridge key or disabled user fails on the next call. Keyed by the bridge key itself, which
 * never comes from a caller, so the lookup reveals nothing. The bridge key's own last use is then
 * written only on a load; the legacy key's, which the cutover reads, is still recorded per call.
 */
export function inProcessV4(core: GatewayDeps & HttpDeps): V4ClientFor {
  const principals = new TopicCache<Principal>(core.changes, 'credentials');
  const principalOf = (apiKey: string, freshness: Freshness) =>
    principals.get(apiKey, () => core.auth.authenticate({ 'x-api-key': apiKey }), undefined, freshness);
  return (requestId, freshness) => ({
    async call(operation, input, apiKey) {
      const op = domainOperationByName(operation);
      // The maps were checked against the operation table at start, so this is our fault, not the caller's.
      if (!op) throw new Error(`v4 operation ${operation} is not in the operation table`);
      try {
        const principal = await principalOf(apiKey, freshness);
        const data = await invokeOperation(op, { core, principal, requestId }, input);
        return { status: op.successStatus, body: { ok: true, data } };
      } catch (error) {
        if (error instanceof AppError) return failure(error);
        throw error;
      }
    },
  });
}
