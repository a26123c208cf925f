import type { GatewayDeps } from './deps.js';
import { badRequest } from '../kit/errors.js';
import { callUpstream } from '../kit/upstream.js';
import { domainOperationByName } from '../operations/domain-table.js';
import { fillPath } from '../kit/path-template.js';
import { upstreamFailure } from './upstream-failure.js';
import type { V4Client, V4Envelope } from './v4-client.js';

/**
 * A path parameter as one URL segment. The in-process client validates the whole input first; over
 * HTTP the path is built before the core sees it, so a value that is no single segment (missing, an
 * object, `.` or `..`) is the caller's mistake here too, as it is in process.
 */
function segmentOf(name: string, value: unknown): string {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
  if (text === undefined || text === '' || text === '.' || text === '..') {
    throw badRequest('validation_failed', `Invalid request: ${name}: must be an identifier`, [{ field: name, rule: 'invalid_type', message: 'must be an identifier' }]);
  }
  return encodeURIComponent(text);
}

/** A query value as text; String() would throw on an object whose own toString is not a function. */
const queryText = (value: unknown) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));

function queryString(input: Record<string, unknown>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, queryText(item));
  }
  const text = query.toString();
  return text ? `?${text}` : '';
}

function isEnvelope(body: unknown): body is V4Envelope {
  return typeof body === 'object' && body !== null && typeof (body as { ok?: unknown }).ok === 'boolean';
}

/**
 * The v4 client of the separate gateway process: the same calls as the in-process client, over
 * HTTP to the core, on kept-alive connections; a call past the timeout closes its own (see callUpstream).
 */
export function httpV4Client(core: GatewayDeps, upstreamUrl: string, requestId: string, timeoutMs = core.config.legacyV2TimeoutMs): V4Client {
  const base = upstreamUrl.replace(/\/+$/, '');
  return {
    async call(operation, input, apiKey) {
      const op = domainOperationByName(operation);
      // The maps were checked against the operation table at start, so this is our fault, not the caller's.
      if (!op) throw new Error(`v4 operation ${operation} is not in the operation table`);
      const { path, rest } = fillPath(op.path, input, segmentOf);
      const hasBody = op.method !== 'GET';
      const upstream = { kind: 'v4', name: 'The v4 core', call: `${op.method} ${op.path}`, timeoutMs };
      let status: number;
      let body: unknown;
      try {
        const response = await callUpstream(`${base}${path}${hasBody ? '' : queryString(rest)}`, {
          method: op.method,
          headers: {
            'x-api-key': apiKey,
            'x-request-id': requestId,
            accept: 'application/json',
            ...(hasBody ? { 'content-type': 'application/json' } : {}),
          },
          ...(hasBody ? { body: JSON.stringify(rest) } : {}),
          timeoutMs,
        });
        status = response.status;
        body = JSON.parse(response.text);
      } catch (error) {
        throw upstreamFailure(core, error, upstream);
      }
      // Anything but a v4 envelope (a proxy's error page, say) means the core was not the one answering.
      if (!isEnvelope(body)) throw upstreamFailure(core, new Error('not a v4 envelope'), upstream);
      return { status, body };
    },
  };
}
