import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  type InitializeRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { setImmediate as yieldToOtherRequests } from 'node:timers/promises';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { AnyOperation } from '../operations/operation.js';
import type { McpDeps } from './deps.js';
import { AppError, ServiceUnavailable } from '../kit/errors.js';
import { toAppError } from '../http/errors.js';
import { ClientReplies } from './client-replies.js';
import { JsonResponseTransport } from './json-transport.js';
import { rateLimiter } from '../http/rate-limit.js';
import { noteErrorCode, notePrincipal } from '../http/request-log.js';
import { isOAuthScope } from '../oauth/scopes.js';
import { bearerChallenge, DISCOVERY_PATHS, MCP_PATH, registerProtectedResourceMetadata } from './discovery.js';
import { originAllowed, registerCors } from '../http/cors.js';
import { hijackKeepingHeaders } from '../http/hijack.js';
import { OAUTH_PATHS } from '../oauth/provider.js';
import { registerIcons } from './icons.js';
import { inFlightLimit, type Release } from './in-flight.js';
import { createMcpMetrics } from './metrics.js';
import { createModernLeg, header, modernRoute, MODERN_PROTOCOL_VERSIONS, type ModernRoute } from './modern.js';
import { acceptsBatches, answerWithoutSdkServer, capabilitiesInRevision, createMcpServer, negotiateVersion, PROTOCOL_VERSIONS } from './server.js';
import { canElicit, type McpCallContext } from './tool-calls.js';
import { newSessionId, principalBinding, sharedSessionStore, type McpSession } from './sessions.js';
import { canCall, toolOperation } from './tools.js';


/** The largest MCP body: a tool call's arguments are a few kilobytes; larger is refused before it is read. */
export const MCP_BODY_LIMIT_BYTES = 64 * 1024;
/** MCP requests one credential may have in flight on one instance (an approval's stream holds its place). */
export const MCP_IN_FLIGHT_PER_CREDENTIAL = 8;
/**
 * The most messages in one JSON-RPC batch (2025-03-26). A batch holds one place in flight and runs its
 * calls one after another, so this bounds how long one POST can keep its place: a client wanting more
 * sends more POSTs, each counted against the credential's places like any other.
 */
export const MCP_BATCH_MAX_MESSAGES = 16;

/** JSON-RPC error codes the SDK's transport uses for HTTP-level refusals. */
const SERVER_ERROR = -32000;
const SESSION_NOT_FOUND = -32001;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;
const PARSE_ERROR = -32700;

/** The id of a body that is one JSON-RPC request; null for a batch, a notification or no body (JSON-RPC 2.0 §5). */
function requestIdOf(body: unknown): string | number | null {
  const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/**
 * An HTTP-level refusal as a JSON-RPC error, answering the request's own id when it has one. The
 * service's error code is sent in `data.code` and goes on the request's log line.
 */
function refuse(reply: FastifyReply, status: number, errorCode: string, message: string, code = SERVER_ERROR) {
  noteErrorCode(reply.request, errorCode);
  return reply
    .status(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', id: requestIdOf(reply.request.body), error: { code, message, data: { code: errorCode } } });
}

/** The JSON-RPC message the body (or a batch's element) is; undefined when it is none. */
function parseBody(body: unknown): JSONRPCMessage | undefined {
  const parsed = JSONRPCMessageSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'method' in message && 'id' in message;

/** The message when it is an initialize request; the cheap method test spares a schema parse on every other call. */
function initializeRequest(message: JSONRPCMessage): (InitializeRequest & JSONRPCRequest) | undefined {
  return isRequest(message) && message.method === 'initialize' && isInitializeRequest(message) ? message : undefined;
}

/** The tool a tools/call names; undefined for any other request, or a name that is not a string. */
function calledTool(request: JSONRPCRequest): AnyOperation | undefined {
  const name = request.method === 'tools/call' ? request.params?.name : undefined;
  return typeof name === 'string' ? toolOperation(name) : undefined;
}

/** A scope the connection lacks for this tool call but could be granted; what OAuth never grants is an ordinary tool error instead. */
function missingScope(principal: Principal, request: JSONRPCRequest): string | undefined {
  const op = calledTool(request);
  return op?.capability && !canCall(principal, op) && isOAuthScope(op.capability) ? op.capability : undefined;
}

interface ServedCall {
  principal: Principal;
  session: McpSession;
  request: JSONRPCRequest;
  /** The request initialized the session: its id goes out in Mcp-Session-Id. */
  created: boolean;
  /** Gives back the request's place in flight. */
  release: Release;
}

function wantsApproval(session: McpSession, request: JSONRPCRequest): boolean {
  return canElicit(session.clientCapabilities) && calledTool(request)?.readOnly === false;
}

const errorAnswer = (id: string | number | null, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * The answer to a session request that needs no SDK server, as JSON text: a tool call naming no tool,
 * or a plain tool call (see answerWithoutSdkServer); undefined for the rest.
 */
async function answerDirectly(context: McpCallContext, session: McpSession, request: JSONRPCRequest): Promise<string | undefined> {
  if (request.method === 'tools/call' && typeof request.params?.name !== 'string') {
    // The SDK would answer an internal error (-32603) for the client's mistake.
    return errorAnswer(request.id, INVALID_PARAMS, 'params.name must be a tool name (a string)');
  }
  return answerWithoutSdkServer(context, request, session.clientCapabilities);
}

export async function registerMcp(app: FastifyInstance, core: McpDeps): Promise<void> {
  // Session records live in the shared state, so any instance serves any session's next request.
  const sessions = sharedSessionStore(core.shared);
  const replies = new ClientReplies();
  const metrics = createMcpMetrics(core.metrics.registry);
  // Before the routes it serves: a browser client reads the endpoint and the discovery documents across
  // origins, and registers itself (oidc-provider answers CORS on its other endpoints, not on registration).
  registerCors(app, core, [MCP_PATH, ...DISCOVERY_PATHS, OAUTH_PATHS.registration]);
  registerProtectedResourceMetadata(app, core);
  registerIcons(app);

  const modern = createModernLeg(core, metrics);
  // Sessions are records in the shared state: a principal opening them without end would fill it.
  // Creation per hour is bounded, so live sessions are too (at most twice the limit, with the idle TTL of an hour).
  const sessionLimit = rateLimiter(core, { name: 'mcp_sessions', limit: core.config.mcpSessionsPerHour, windowSeconds: 60 * 60 });

  // Pending approvals would otherwise hold their streams (and the close) open until they time out.
  app.addHook('preClose', async () => {
    replies.end();
    await modern.close();
  });

  const inFlight = inFlightLimit(core.metrics.registry, MCP_IN_FLIGHT_PER_CREDENTIAL);
  /** What onRequest established for a request it let through. */
  const admitted = new WeakMap<FastifyRequest, { principal: Principal; release: Release }>();

  /** Sessions unreachable while Redis reconnects (or another dependency down): a JSON-RPC refusal to retry. */
  const unavailable = (reply: FastifyReply, error: unknown) => {
    if (!(error instanceof ServiceUnavailable) || reply.sent) throw error;
    void reply.header('retry-after', String(error.retryAfterSeconds));
    return refuse(reply, 503, error.code, error.message);
  };

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    bodyLimit: MCP_BODY_LIMIT_BYTES,
    // Origin, credential and the credential's places in flight, before the body is read: a refused
    // request costs no parse, and the places count credentials as authentication knows them.
    onRequest: async (request, reply) => {
      try {
        return await admit(request, reply);
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    handler: async (request, reply) => {
      try {
        return await handle(request, reply, admitted.get(request)!);
      } catch (error) {
        return unavailable(reply, error);
      }
    },
    // A body Fastify could not read (malformed, __proto__, too large, not JSON) answers in JSON-RPC, as
    // every other refusal of this endpoint does; anything else goes on to the app's handler.
    errorHandler: (error: FastifyError, _request, reply) => {
      if (!error.code?.startsWith('FST_ERR_CTP_') || (error.statusCode ?? 500) >= 500) throw error;
      const why = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? `it is larger than the MCP endpoint's limit of ${MCP_BODY_LIMIT_BYTES} bytes` : error.message;
      return refuse(reply, error.statusCode!, toAppError(error).code, `The body could not be read as JSON-RPC: ${why}`, PARSE_ERROR);
    },
  });

  /** Refuses the request (the answer is sent) or records its principal and place for the handler. */
  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    // DNS rebinding defence: a browser page may reach /mcp only from an allowed origin.
    if (!originAllowed(core, header(request, 'origin'))) {
      return refuse(reply, 403, 'origin_not_allowed', `Origin ${header(request, 'origin')} may not use this MCP endpoint`);
    }
    let principal: Principal;
    try {
      principal = await core.auth.authenticate(request.headers, 'mcp');
      notePrincipal(request, principal);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 401) throw error;
      const challenge = header(request, 'authorization') === undefined ? undefined : 'invalid_token';
      void reply.header('www-authenticate', bearerChallenge(core, request, { error: challenge }));
      return refuse(reply, 401, error.code, error.message);
    }
    const release = inFlight.enter(principalBinding(principal), reply);
    if (!release) {
      core.metrics.http.recordRateLimited('mcp_in_flight');
      void reply.header('retry-after', '1');
      const message = `Too many MCP requests in flight for this credential (at most ${MCP_IN_FLIGHT_PER_CREDENTIAL}); retry when one is answered`;
      return refuse(reply, 429, 'rate_limited', message);
    }
    admitted.set(request, { principal, release });
    return undefined;
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, { principal, release }: { principal: Principal; release: Release }): Promise<FastifyReply> {
    if (request.method === 'GET') {
      // No server-initiated messages outside a request: the spec lets us decline the GET stream.
      return refuse(reply.header('allow', 'POST, DELETE'), 405, 'method_not_allowed', 'This server offers no GET stream; POST JSON-RPC messages');
    }
    const protocolVersion = header(request, 'mcp-protocol-version');
    const route = request.method === 'POST' ? modernRoute(request) : undefined;
    if (route) return postModern(request, reply, principal, route);
    if (protocolVersion !== undefined && (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
      return refuse(reply.header('allow', 'POST'), 405, 'method_not_allowed', `The ${protocolVersion} revision has no sessions: POST each request with its _meta`);
    }
    // A served version other than the session's is no refusal (the SDK's transport accepts it too, and
    // clients in the field send one): the session's revision, negotiated at initialize, governs.
    if (protocolVersion !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
      // Deliberately not the 2026-07-28 error (-32022): a dual-era client falls back to initialize on this one.
      return refuse(reply, 400, 'unsupported_protocol_version', `Unsupported MCP-Protocol-Version ${protocolVersion}; supported: ${[...MODERN_PROTOCOL_VERSIONS, ...PROTOCOL_VERSIONS].join(', ')}`);
    }
    if (request.method === 'DELETE') {
      const session = await boundSession(request, reply, principal);
      if (!session) return reply;
      await sessions.delete(session.id);
      replies.end(session.id);
      return reply.status(204).send();
    }
    return post(request, reply, principal, release);
  }

  /** A 2026-07-28 request: no session; the scope check is ours, everything else the modern leg's. */
  async function postModern(request: FastifyRequest, reply: FastifyReply, principal: Principal, route: ModernRoute): Promise<FastifyReply> {
    // Only an OAuth grant can be stepped up; an API key's call needs no second parse of the body.
    const message = principal.credential.kind === 'oauth' ? parseBody(request.body) : undefined;
    if (message && isRequest(message) && refusedForScope(reply, principal, message)) return reply;
    return modern.serve(request, reply, principal, route);
  }

  /** The session the request names, if it exists and belongs to this principal; otherwise the refusal is sent. */
  async function boundSession(request: FastifyRequest, reply: FastifyReply, principal: Principal): Promise<McpSession | undefined> {
    const id = header(request, 'mcp-session-id');
    if (!id) {
      void refuse(reply, 400, 'session_id_required', 'Mcp-Session-Id header is required: initialize first');
      return undefined;
    }
    const session = await sessions.get(id);
    // Another principal's session answers as unknown: a session id reveals nothing to whoever holds it.
    if (!session || session.boundTo !== principalBinding(principal)) {
      void refuse(reply, 404, 'session_not_found', 'Session not found: initialize a new session', SESSION_NOT_FOUND);
      return undefined;
    }
    return session;
  }

  async function post(request: FastifyRequest, reply: FastifyReply, principal: Principal, release: Release): Promise<FastifyReply> {
    const accept = header(request, 'accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(reply, 406, 'not_acceptable', 'Not Acceptable: Accept must list both application/json and text/event-stream');
    }
    if (Array.isArray(request.body)) {
      // A batch belongs to a session (initialize may not be in one), whose revision decides.
      const session = await boundSession(request, reply, principal);
      if (!session) return reply;
      if (!acceptsBatches(session.protocolVersion)) {
        return refuse(reply, 400, 'batch_not_supported', `JSON-RPC batches are not part of MCP ${session.protocolVersion}: send one message per POST`, INVALID_REQUEST);
      }
      return postBatch(request, reply, principal, session, request.body as unknown[]);
    }
    const message = parseBody(request.body);
    if (!message) return refuse(reply, 400, 'invalid_json_rpc', 'The body must be a JSON-RPC 2.0 message', PARSE_ERROR);
    const initialize = initializeRequest(message);
    if (initialize) return open(request, reply, principal, initialize, release);

    const session = await boundSession(request, reply, principal);
    if (!session) return reply;
    if (!isRequest(message)) {
      // A notification, or the client's reply to one of our requests: nothing to answer.
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) replies.deliver(session.id, message);
      return reply.status(202).send();
    }
    if (refusedForScope(reply, principal, message)) return reply;
    const answer = await answerDirectly(callContext(request, principal), session, message);
    if (answer) return reply.type('application/json').send(answer);
    return serve(request, reply, { principal, session, request: message, created: false, release });
  }

  function callContext(request: FastifyRequest, principal: Principal): McpCallContext {
    return { core, principal, requestId: request.id, metrics, log: request.log };
  }

  /**
   * A JSON-RPC batch of a revision that has them, within the limits: the body's size (as any POST),
   * MCP_BATCH_MAX_MESSAGES messages, and the one place in flight the POST holds, its calls run one
   * after another. Requests are answered in one array, in order; an element that is no message, or
   * is initialize, gets its own error. A call needing a scope the grant lacks refuses the whole batch
   * with the step-up challenge before any call runs. Such revisions have no elicitation (see
   * capabilitiesInRevision), so no call here asks for approval on a stream.
   */
  async function postBatch(request: FastifyRequest, reply: FastifyReply, principal: Principal, session: McpSession, elements: unknown[]): Promise<FastifyReply> {
    if (elements.length === 0) return refuse(reply, 400, 'empty_batch', 'A JSON-RPC batch must hold at least one message', INVALID_REQUEST);
    if (elements.length > MCP_BATCH_MAX_MESSAGES) {
      const message = `A JSON-RPC batch may hold at most ${MCP_BATCH_MAX_MESSAGES} messages; this one holds ${elements.length}: send the rest in another POST`;
      return refuse(reply, 400, 'batch_too_large', message, INVALID_REQUEST);
    }
    const messages = elements.map(parseBody);
    for (const message of messages) {
      if (message && isRequest(message) && refusedForScope(reply, principal, message)) return reply;
    }
    const context = callContext(request, principal);
    let sdk: { server: Server; transport: JsonResponseTransport } | undefined;
    const answers: string[] = [];
    try {
      for (const [index, message] of messages.entries()) {
        // Between two calls other requests get their turn: a batch costs the instance what as many POSTs would.
        if (index > 0) await yieldToOtherRequests();
        if (!message) {
          answers.push(errorAnswer(null, INVALID_REQUEST, 'Each element of a batch must be a JSON-RPC 2.0 message'));
        } else if (!isRequest(message)) {
          if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) replies.deliver(session.id, message);
        } else if (message.method === 'initialize') {
          answers.push(errorAnswer(message.id, INVALID_REQUEST, 'initialize may not be part of a JSON-RPC batch'));
        } else {
          const direct = await answerDirectly(context, session, message);
          if (direct) {
            answers.push(direct);
            continue;
          }
          sdk ??= await connectedServer(context, session);
          const answer = await sdk.transport.answer(message, { requestInfo: { headers: request.headers } });
          if (answer) answers.push(JSON.stringify(answer));
        }
      }
    } finally {
      await sdk?.server.close();
    }
    // Notifications and replies alone are accepted with nothing to answer, as one of them would be.
    if (answers.length === 0) return reply.status(202).send();
    return reply.type('application/json').send(`[${answers.join(',')}]`);
  }

  async function connectedServer(context: McpCallContext, session: McpSession): Promise<{ server: Server; transport: JsonResponseTransport }> {
    const server = createMcpServer(context, session.clientCapabilities);
    const transport = new JsonResponseTransport();
    await server.connect(transport);
    return { server, transport };
  }

  /** Opens a session for an initialize request, within the principal's hourly allowance, and answers it. */
  async function open(
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    initialize: InitializeRequest & JSONRPCRequest,
    release: Release,
  ): Promise<FastifyReply> {
    try {
      await sessionLimit(reply, { principal: principalBinding(principal) });
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 429) throw error;
      return refuse(reply, 429, error.code, error.message);
    }
    const version = negotiateVersion(initialize.params.protocolVersion);
    const session: McpSession = {
      id: newSessionId(),
      boundTo: principalBinding(principal),
      protocolVersion: version,
      clientCapabilities: capabilitiesInRevision(version, initialize.params.capabilities),
      clientInfo: initialize.params.clientInfo,
      createdAt: core.now().getTime(),
    };
    await sessions.create(session);
    return serve(request, reply, { principal, session, request: initialize, created: true, release });
  }

  /**
   * An OAuth connection calling a tool its grant lacks is refused at the HTTP level with a step-up
   * challenge (true when the refusal was sent); API keys get an ordinary tool error instead.
   */
  function refusedForScope(reply: FastifyReply, principal: Principal, request: JSONRPCRequest): boolean {
    if (principal.credential.kind !== 'oauth') return false;
    const scope = missingScope(principal, request);
    if (scope === undefined) return false;
    metrics.recordToolCall(calledTool(request)?.name ?? 'unknown', 'insufficient_scope');
    const wanted = [...new Set([...principal.credential.scopes, scope])];
    void reply.header('www-authenticate', bearerChallenge(core, reply.request, { error: 'insufficient_scope', scope: wanted }));
    void refuse(reply, 403, 'insufficient_scope', `This connection lacks ${scope}; authorize it again with that scope`);
    return true;
  }

  /** Hands the request to a fresh SDK server and transport; the session itself is ours. */
  async function serve(request: FastifyRequest, reply: FastifyReply, call: ServedCall) {
    const { principal, session, created } = call;
    const approval = wantsApproval(session, call.request);
    hijackKeepingHeaders(reply);
    if (created) reply.raw.setHeader('mcp-session-id', session.id);

    if (!approval) {
      const { server, transport } = await connectedServer(callContext(request, principal), session);
      reply.raw.on('close', () => void server.close());
      const answer = await transport.answer(call.request, { requestInfo: { headers: request.headers } });
      if (answer) reply.raw.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      return reply;
    }
    const server = createMcpServer(callContext(request, principal), session.clientCapabilities);
    // A write that asks the user for approval needs the SDK's stream to ask on. While it waits on the
    // user it holds no place in flight: the user's answer comes back in a POST of its own, which needs one.
    call.release();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const forget = replies.attach(transport, session.id);
    await server.connect(transport);
    reply.raw.on('close', () => {
      forget();
      void server.close();
    });
    await transport.handleRequest(request.raw, reply.raw, request.body);
    return reply;
  }
}
