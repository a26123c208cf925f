import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  type InitializeRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { AnyOperation } from '../operations/operation.js';
import type { Core } from '../core.js';
import { AppError, ServiceUnavailable } from '../errors.js';
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
import { acceptsBatches, answerWithoutSdkServer, createMcpServer, negotiateVersion, PROTOCOL_VERSIONS } from './server.js';
import { canElicit } from './tool-calls.js';
import { newSessionId, principalBinding, sharedSessionStore, type McpSession } from './sessions.js';
import { canCall, toolOperation } from './tools.js';


/** The largest MCP body: a tool call's arguments are a few kilobytes; larger is refused before it is read. */
export const MCP_BODY_LIMIT_BYTES = 64 * 1024;
/** MCP requests one credential may have in flight on one instance (an approval's stream holds its place). */
export const MCP_IN_FLIGHT_PER_CREDENTIAL = 8;

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
 * service's error code, when the refusal has one, is sent in `data.code` and goes on the request's log line.
 */
function refuse(reply: FastifyReply, status: number, message: string, code = SERVER_ERROR, errorCode?: string) {
  if (errorCode !== undefined) noteErrorCode(reply.request, errorCode);
  return reply
    .status(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', id: requestIdOf(reply.request.body), error: { code, message, ...(errorCode === undefined ? {} : { data: { code: errorCode } }) } });
}

/** The POST's JSON-RPC message; undefined when the body is not one (a batch is refused before, see acceptsBatches). */
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

export async function registerMcp(app: FastifyInstance, core: Core): Promise<void> {
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
    return refuse(reply, 503, error.message, SERVER_ERROR, error.code);
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
      return refuse(reply, error.statusCode!, `The body could not be read as JSON-RPC: ${why}`, PARSE_ERROR);
    },
  });

  /** Refuses the request (the answer is sent) or records its principal and place for the handler. */
  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    // DNS rebinding defence: a browser page may reach /mcp only from an allowed origin.
    if (!originAllowed(core, header(request, 'origin'))) {
      return refuse(reply, 403, `Origin ${header(request, 'origin')} may not use this MCP endpoint`);
    }
    let principal: Principal;
    try {
      principal = await core.auth.authenticate(request.headers, 'mcp');
      notePrincipal(request, principal);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 401) throw error;
      const challenge = header(request, 'authorization') === undefined ? undefined : 'invalid_token';
      void reply.header('www-authenticate', bearerChallenge(core, { error: challenge }));
      return refuse(reply, 401, error.message, SERVER_ERROR, error.code);
    }
    const release = inFlight.enter(principalBinding(principal), reply);
    if (!release) {
      core.metrics.http.recordRateLimited('mcp_in_flight');
      void reply.header('retry-after', '1');
      const message = `Too many MCP requests in flight for this credential (at most ${MCP_IN_FLIGHT_PER_CREDENTIAL}); retry when one is answered`;
      return refuse(reply, 429, message, SERVER_ERROR, 'rate_limited');
    }
    admitted.set(request, { principal, release });
    return undefined;
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, { principal, release }: { principal: Principal; release: Release }): Promise<FastifyReply> {
    if (request.method === 'GET') {
      // No server-initiated messages outside a request: the spec lets us decline the GET stream.
      return refuse(reply.header('allow', 'POST, DELETE'), 405, 'This server offers no GET stream; POST JSON-RPC messages');
    }
    const protocolVersion = header(request, 'mcp-protocol-version');
    const route = request.method === 'POST' ? modernRoute(request) : undefined;
    if (route) return postModern(request, reply, principal, route);
    if (protocolVersion !== undefined && (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
      return refuse(reply.header('allow', 'POST'), 405, `The ${protocolVersion} revision has no sessions: POST each request with its _meta`);
    }
    if (protocolVersion !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
      // Deliberately not the 2026-07-28 error (-32022): a dual-era client falls back to initialize on this one.
      return refuse(reply, 400, `Unsupported MCP-Protocol-Version ${protocolVersion}; supported: ${[...MODERN_PROTOCOL_VERSIONS, ...PROTOCOL_VERSIONS].join(', ')}`);
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
      void refuse(reply, 400, 'Mcp-Session-Id header is required: initialize first');
      return undefined;
    }
    const session = await sessions.get(id);
    // Another principal's session answers as unknown: a session id reveals nothing to whoever holds it.
    if (!session || session.boundTo !== principalBinding(principal)) {
      void refuse(reply, 404, 'Session not found: initialize a new session', SESSION_NOT_FOUND);
      return undefined;
    }
    return session;
  }

  async function post(request: FastifyRequest, reply: FastifyReply, principal: Principal, release: Release): Promise<FastifyReply> {
    const accept = header(request, 'accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(reply, 406, 'Not Acceptable: Accept must list both application/json and text/event-stream');
    }
    if (Array.isArray(request.body)) {
      // A batch belongs to a session (initialize may not be in one), whose revision decides.
      const session = await sessionOf(request, reply, principal);
      if (!session) return reply;
      // Thousands of calls in one POST would hold the instance for seconds.
      if (!acceptsBatches(session.protocolVersion)) {
        return refuse(reply, 400, `JSON-RPC batches are not part of MCP ${session.protocolVersion}: send one message per POST`, INVALID_REQUEST);
      }
    }
    const message = parseBody(request.body);
    if (!message) return refuse(reply, 400, 'The body must be a JSON-RPC 2.0 message', PARSE_ERROR);
    const initialize = initializeRequest(message);
    if (initialize) return open(request, reply, principal, initialize, release);

    const session = await sessionOf(request, reply, principal);
    if (!session) return reply;
    if (!isRequest(message)) {
      // A notification, or the client's reply to one of our requests: nothing to answer.
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) replies.deliver(session.id, message);
      return reply.status(202).send();
    }
    if (message.method === 'tools/call' && typeof message.params?.name !== 'string') {
      // The SDK would answer an internal error (-32603) for the client's mistake.
      return reply.type('application/json').send({ jsonrpc: '2.0', id: message.id, error: { code: INVALID_PARAMS, message: 'params.name must be a tool name (a string)' } });
    }
    if (refusedForScope(reply, principal, message)) return reply;
    const context = { core, principal, requestId: request.id, metrics, log: request.log };
    const answer = await answerWithoutSdkServer(context, message, session.clientCapabilities);
    if (answer) return reply.type('application/json').send(answer);
    return serve(request, reply, { principal, session, request: message, created: false, release });
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
      return refuse(reply, 429, error.message, SERVER_ERROR, error.code);
    }
    const session: McpSession = {
      id: newSessionId(),
      boundTo: principalBinding(principal),
      protocolVersion: negotiateVersion(initialize.params.protocolVersion),
      clientCapabilities: initialize.params.capabilities,
      clientInfo: initialize.params.clientInfo,
      createdAt: core.now().getTime(),
    };
    await sessions.create(session);
    return serve(request, reply, { principal, session, request: initialize, created: true, release });
  }

  /** The POST's bound session, in the revision it negotiated; otherwise the refusal is sent. */
  async function sessionOf(request: FastifyRequest, reply: FastifyReply, principal: Principal): Promise<McpSession | undefined> {
    const session = await boundSession(request, reply, principal);
    if (!session) return undefined;
    const version = header(request, 'mcp-protocol-version');
    if (version !== undefined && version !== session.protocolVersion) {
      void refuse(reply, 400, `MCP-Protocol-Version ${version} differs from the session's ${session.protocolVersion}`);
      return undefined;
    }
    return session;
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
    void reply.header('www-authenticate', bearerChallenge(core, { error: 'insufficient_scope', scope: wanted }));
    void refuse(reply, 403, `This connection lacks ${scope}; authorize it again with that scope`, SERVER_ERROR, 'insufficient_scope');
    return true;
  }

  /** Hands the request to a fresh SDK server and transport; the session itself is ours. */
  async function serve(request: FastifyRequest, reply: FastifyReply, call: ServedCall) {
    const { principal, session, created } = call;
    const approval = wantsApproval(session, call.request);
    const server = createMcpServer({ core, principal, requestId: request.id, metrics, log: request.log }, session.clientCapabilities);
    hijackKeepingHeaders(reply);
    if (created) reply.raw.setHeader('mcp-session-id', session.id);

    if (!approval) {
      const transport = new JsonResponseTransport(reply.raw);
      await server.connect(transport);
      reply.raw.on('close', () => void server.close());
      transport.receive(call.request, { requestInfo: { headers: request.headers } });
      return reply;
    }
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
