import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_KEY_PREFIX, hashSecret } from '../access/api-keys.js';
import type { GatewayDeps } from './deps.js';
import { AppError, badRequest, errorObject, forbidden, unauthorized } from '../kit/errors.js';
import { restInput } from '../http/rest.js';
import { errorHandler } from '../http/errors.js';
import { noteCaller, noteErrorCode } from '../http/request-log.js';
import { callUpstream } from '../kit/upstream.js';
import { upstreamFailure } from './upstream-failure.js';
import { MAX_PAGE_SIZE } from '../operations/common.js';
import { fillPath, splitPath } from '../kit/path-template.js';
import { domainOperationByName } from '../operations/domain-table.js';
import { deprecationSignals, OWNER_PLAN_PATH } from '../legacy/deprecation.js';
import { buildOwnerPlan } from '../migration/owner-plan.js';
import { routeAnchor } from '../migration/migration-guide.js';
import { readConfirmedLater, TopicCache, type Freshness } from '../store/change-feed.js';
import { resolveLegacyKey, type LegacyKeyResolution } from '../legacy/legacy-keys.js';
import { entryMatches, scopeEntryFor, type LookupTopic, type Route } from '../legacy/mappings.js';
import { shadowCheckOf } from '../migration/shadow-check.js';
import { Translation, type Doc, type SharedLookup } from '../legacy/translate.js';
import type { V4Client, V4ClientFor } from './v4-client.js';

/*
 * The v2 API, served from the maps: every route of mappings/v2-routes.yaml is translated to v4
 * operations called with the legacy key's bridge key, so the core checks each v2 call like a v4 call.
 */

type ActiveKey = Extract<LegacyKeyResolution, { status: 'active' }>;
type V4Route = Extract<Route, { kind: 'v4' }>;

/** The v2 error shape: status, code and message (and details) of the v4 error, or of the gateway's. */
function v2ErrorBody(error: AppError) {
  return { error: { status: error.status, ...errorObject(error) } };
}

/** Answers `error` in the v2 shape; its code goes on the request's log line. */
export function sendV2Error(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  noteErrorCode(request, error.code);
  return reply.status(error.status).send(v2ErrorBody(error));
}

/** With a legacy upstream configured, a 501 is the legacy service's own failure, not the gateway's documented answer. */
function outcomeOf(status: number, forwardsToLegacy: boolean): string {
  if (status < 400) return 'ok';
  if (status === 410) return 'gone';
  if (status === 401 || status === 403) return 'denied';
  if (status === 501 && !forwardsToLegacy) return 'no_successor';
  return status >= 500 ? 'upstream_error' : 'invalid';
}

/** The v4 path of the route's first operation, `:name` segments unfilled; none for a route without a v4 successor. */
function successorTemplate(route: Route): string | undefined {
  return route.kind === 'passthrough' ? undefined : (domainOperationByName(route.operation)?.path ?? '/v4');
}

/**
 * The successor template's filler: the v2 path params put in its `:name` segments, by name, else in
 * order. Split once per route: a CPU profile of a v2 read showed a regex replace per call.
 * Params are percent-encoded again: decoded, a CR, LF or NUL would break (or inject into) the Link header.
 */
function successorPathOf(template: string | undefined): (params: Record<string, string>) => string | undefined {
  if (template === undefined || !template.includes(':')) return () => template;
  const parts = splitPath(template);
  return (params) => {
    let inOrder: string[] | undefined;
    let path = '';
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (i % 2 === 0) {
        path += part;
        continue;
      }
      const value = params[part];
      path += value === undefined ? ((inOrder ??= Object.values(params).map(encodeURIComponent)).shift() ?? `:${part}`) : encodeURIComponent(value);
    }
    return path;
  };
}

type LegacyKeyCache = TopicCache<LegacyKeyResolution>;

/** The caller's legacy key as sent: one non-empty X-API-KEY that is not a v4 key. */
function legacyKeyHeader(request: FastifyRequest): string {
  const raw = request.headers['x-api-key'];
  if (raw === undefined || raw === '') throw unauthorized('missing_api_key', 'Send your v2 API key in the X-API-KEY header');
  if (Array.isArray(raw)) throw unauthorized('ambiguous_credentials', 'Send the X-API-KEY header once');
  if (raw.startsWith(API_KEY_PREFIX)) {
    throw unauthorized(
      'v4_key_on_v2',
      `v2 takes legacy keys only; a v4 key (${API_KEY_PREFIX}…) works on the v4 API, to which this endpoint has a successor`,
    );
  }
  return raw;
}

/** The legacy key `raw` the request sent, active; a known key's id (a disabled one's too) goes on the request's log line. */
async function activeKey(core: GatewayDeps, legacyKeys: LegacyKeyCache, request: FastifyRequest, raw: string, freshness: Freshness): Promise<ActiveKey> {
  // Unknown keys are not cached, so a newly registered key works at once and guessing fills nothing.
  const key = await legacyKeys.get(hashSecret(raw), () => resolveLegacyKey(core, raw), (found) => found.status !== 'unknown', freshness);
  if (key.status === 'unknown') throw unauthorized('invalid_api_key', 'The API key is unknown');
  if (key.status === 'disabled') {
    noteCaller(request, { legacyKeyId: key.legacyKeyId });
    throw unauthorized('legacy_key_disabled', 'This legacy key has been disabled; migrate to a v4 key');
  }
  // The bridge user is whom v4 sees calling: the v2 line and the v4 audit name the same user.
  noteCaller(request, { legacyKeyId: key.legacyKeyId, userId: key.bridgeUserId, companyIds: [key.companyId] });
  return key;
}

interface Answer {
  status: number;
  body: unknown;
  /** Set for a forwarded answer, which is passed on verbatim. */
  contentType?: string;
}

/** A v4 call with the bridge key; a v4 error is thrown as an AppError keeping its status, code and message. */
async function callV4(v4: V4Client, bridgeKey: string, operation: string, input: Doc): Promise<{ status: number; data: unknown }> {
  const { status, body } = await v4.call(operation, input, bridgeKey);
  if (!body.ok) throw new AppError(status, body.error.code, body.error.message, body.error.details);
  return { status, data: body.data };
}

/** Calls the route's v4 operation and follow-ups with the bridge key and translates both ways. */
async function serveV4(core: GatewayDeps, v4: V4Client, route: V4Route, key: ActiveKey, document: Doc, shared: SharedLookup): Promise<Answer> {
  const bridgeKey = key.bridgeApiKey;
  // A key holding a scope with a v4 successor always has a bridge key (see createLegacyKey).
  if (!bridgeKey) throw new Error(`legacy key ${key.legacyKeyId} holds ${route.scope} but has no bridge key`);
  const translation = new Translation(
    async (operation, input) => (await callV4(v4, bridgeKey, operation, input)).data,
    core.mappings.sunset.listCeiling,
    // Per key: what a lookup answers depends on what the key may read.
    (topic, lookupKey, load) => shared(topic, `${key.legacyKeyId} ${lookupKey}`, load),
  );
  const translated = await translation.request(route.request, document);
  const { followUps } = translated;
  // A v2 list walks every page: the first one as large as the later ones, so its cursor fits them.
  const input = route.response.some((t) => t.op === 'unwrap_list') ? { ...translated.input, limit: MAX_PAGE_SIZE } : translated.input;
  const source = { operation: route.operation, input };
  let answer = await callV4(v4, bridgeKey, route.operation, input);
  for (const followUp of followUps) {
    const id = (answer.data as Doc)[followUp.idFrom];
    answer = { status: answer.status, data: (await callV4(v4, bridgeKey, followUp.operation, { ...followUp.fields, id })).data };
  }
  return { status: answer.status, body: await translation.response(route.response, answer.data, source) };
}

function noSuccessor(core: GatewayDeps, route: Route): AppError {
  const reason = scopeEntryFor(core.mappings.scopes, route.scope)?.reason;
  return new AppError(
    501,
    'no_v4_successor',
    `${route.method} ${route.path} (scope ${route.scope}) has no v4 successor${reason ? ` (${reason})` : ''}: it stays on v2, and no legacy v2 upstream (LEGACY_V2_UPSTREAM) is configured to serve it`,
  );
}

/**
 * A path parameter that would change which path it sits in: `.` or `..` (a URL parser resolves them,
 * so `/orders/%2e%2e` would reach `/`) or a slash, decoded by the router from `%2F` or `%5C`.
 */
function checkPathParams(params: Record<string, string>): void {
  // Every v2 call passes here: the refusal is built only when a parameter is refused.
  let details: Array<{ field: string; rule: string; message: string }> | undefined;
  for (const field of Object.keys(params)) {
    const value = params[field]!;
    if (value === '.' || value === '..' || value.includes('/') || value.includes('\\')) {
      (details ??= []).push({ field, rule: 'path_segment', message: 'must be one path segment: not "." or "..", and without / or \\' });
    }
  }
  if (details) {
    throw badRequest('validation_failed', `Invalid path: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details);
  }
}

/**
 * The same call on the legacy v2 API, undefined when LEGACY_V2_UPSTREAM is not set: the matched
 * route's own path with its parameters encoded, and the query as sent. Never the raw URL, whose
 * dot segments and encoded slashes would lead the upstream call out of the path the scope allows.
 */
function legacyV2Url(core: GatewayDeps, route: Route, request: FastifyRequest): string | undefined {
  const upstream = core.config.legacyV2Upstream;
  if (!upstream) return undefined;
  const { path } = fillPath(route.path, request.params as Record<string, string>);
  const queryAt = request.url.indexOf('?');
  return `${upstream.replace(/\/+$/, '')}${path}${queryAt === -1 ? '' : request.url.slice(queryAt)}`;
}

/** Forwards the call unchanged (same path, query, key and body) to the legacy v2 API and passes its answer on. */
async function forwardToLegacy(core: GatewayDeps, route: Route, request: FastifyRequest, rawKey: string): Promise<Answer> {
  const { legacyV2TimeoutMs } = core.config;
  const url = legacyV2Url(core, route, request);
  if (!url) throw noSuccessor(core, route);
  const hasBody = route.method !== 'GET';
  try {
    const response = await callUpstream(url, {
      method: route.method,
      headers: {
        'x-api-key': rawKey,
        'x-request-id': request.id,
        accept: 'application/json',
        ...(hasBody ? { 'content-type': 'application/json' } : {}),
      },
      ...(hasBody ? { body: JSON.stringify(request.body ?? {}) } : {}),
      timeoutMs: legacyV2TimeoutMs,
    });
    return { status: response.status, body: response.text, contentType: response.contentType ?? 'application/json' };
  } catch (error) {
    throw upstreamFailure(core, error, { kind: 'legacy_v2', name: 'The legacy v2 API', call: `${route.method} ${route.path}`, timeoutMs: legacyV2TimeoutMs });
  }
}

/** Every v2 failure in the v2 error shape. */
export const answerV2Error = errorHandler({ send: sendV2Error, failed: 'v2 request failed' });

export function registerV2Routes(app: FastifyInstance, core: GatewayDeps, v4For: V4ClientFor): void {
  const { sunset, scopes } = core.mappings;
  // Disabling a key, or revoking its bridge key or user, drops the cache on every instance (see ChangeFeed).
  const legacyKeys: LegacyKeyCache = new TopicCache(core.changes, 'credentials');
  // A key's access changing drops its lookups too.
  const lookupCaches: Record<LookupTopic, TopicCache<unknown>> = { teams: new TopicCache(core.changes, ['teams', 'credentials']) };
  // One request's lookups trust what is cached as its key's lookup did.
  const sharedLookupFor =
    (freshness: Freshness): SharedLookup =>
    (topic, key, load) =>
      lookupCaches[topic].get(key, load, undefined, freshness);
  const shadow = shadowCheckOf(core);
  for (const route of core.mappings.routes) {
    const routeLabel = `${route.method} ${route.path}`;
    const capability = scopeEntryFor(scopes, route.scope)?.capability ?? 'none';
    const signals = deprecationSignals(sunset, routeAnchor(route));
    const successorPath = successorPathOf(successorTemplate(route));
    // The maps' check holds a GET to reads only (primary calls and follow-ups alike).
    const translatedRead = route.kind === 'v4' && route.method === 'GET';
    app.route({
      method: route.method,
      url: `${sunset.prefix}${route.path}`,
      // Every v2 answer, 410 and errors included, carries the deprecation signals.
      // Callback-style hooks: an async one costs a promise per request on the hot path.
      onRequest: (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const verdict = signals(core.now(), successorPath(request.params as Record<string, string>));
        void reply.headers(verdict.headers);
        if (!verdict.gone) return done();
        const { status, code, message, retryAfterSeconds } = verdict.gone;
        if (retryAfterSeconds !== undefined) void reply.header('retry-after', String(retryAfterSeconds));
        void sendV2Error(request, reply, new AppError(status, code, message));
      },
      onResponse: (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const outcome = outcomeOf(reply.statusCode, Boolean(core.config.legacyV2Upstream));
        core.metrics.gateway.recordV2Request({ route: routeLabel, scope: route.scope, capability, outcome }, reply.elapsedTime / 1000);
        shadow.afterAnswer(request, reply.statusCode);
        done();
      },
      errorHandler: answerV2Error,
      handler: async (request, reply) => {
        const asOf = performance.now();
        const rawKey = legacyKeyHeader(request);
        // Usage is counted, failures included, once per request: by the attempt whose outcome is answered.
        let counted: string | undefined;
        const attempt = async (freshness: Freshness): Promise<Answer> => {
          counted = undefined;
          // A second run's line names whom it found, not what the first run's cache held.
          request.loggedCaller = null;
          const key = await activeKey(core, legacyKeys, request, rawKey, freshness);
          if (!key.scopes.some((held) => entryMatches(held, route.scope))) {
            throw forbidden('missing_scope', `This legacy key lacks the v2 scope ${route.scope}, which ${routeLabel} requires`, {
              required: route.scope,
            });
          }
          checkPathParams(request.params as Record<string, string>);
          counted = key.legacyKeyId;
          return route.kind === 'passthrough'
            ? forwardToLegacy(core, route, request, rawKey)
            : shadow.translated(request, { route, key: { legacyKeyId: key.legacyKeyId, companyId: key.companyId, rawKey }, legacyUrl: legacyV2Url(core, route, request) }, () =>
                serveV4(core, v4For(request.id, freshness), route, key, restInput(route.method, request), sharedLookupFor(freshness)),
              );
        };
        // A translated read runs on what the caches hold and is confirmed after (decision record 0008); a write,
        // a call forwarded to the legacy API and, while the shadow check is on, every read (a second run would
        // sample it again) wait first.
        const confirmedLater = translatedRead && !shadow.enabled;
        let answer: Answer;
        try {
          answer = confirmedLater ? await readConfirmedLater(core.changes, asOf, attempt) : await attempt({ asOf, confirmedLater: false });
        } finally {
          // Written in batches (see UsageRecorder).
          if (counted !== undefined) core.legacyUsage.record(counted, routeLabel, route.scope, core.now());
        }
        if (answer.contentType) void reply.type(answer.contentType);
        return reply.status(answer.status).send(answer.body);
      },
    });
  }

  // The integration owner's entry point: the key's own plan. Answered during brownouts too (it is how the
  // owner learns of them), never counted as v2 usage (reading the plan must not keep a key from going quiet).
  app.get(`${sunset.prefix}${OWNER_PLAN_PATH}`, { errorHandler: answerV2Error }, async (request) => {
    const key = await activeKey(core, legacyKeys, request, legacyKeyHeader(request), { asOf: performance.now(), confirmedLater: false });
    return buildOwnerPlan(core, key);
  });
}
