import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { isJSONRPCErrorResponse, isJSONRPCResultResponse, type InitializeRequest, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { setImmediate as yieldToOtherRequests } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { McpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';
import { hijackKeepingHeaders } from '../http/hijack.js';
import { rateLimiter } from '../http/rate-limit.js';
import { calledTool, type Admission, type Admitted } from './admission.js';
import { ClientReplies } from './client-replies.js';
import { errorAnswer, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, refuse, SESSION_NOT_FOUND } from './json-rpc.js';
import { initializeRequest, isRequest, parseBody } from './messages.js';
import { JsonResponseTransport } from './json-transport.js';
import { MCP_BATCH_MAX_MESSAGES } from './limits.js';
import type { McpMetrics } from './metrics.js';
import { header } from './revisions.js';
import { acceptsBatches, answerWithoutSdkServer, capabilitiesInRevision, createMcpServer, negotiateVersion } from './server.js';
import { newSessionId, principalBinding, sharedSessionStore, type McpSession, type SessionStore } from './sessions.js';
import { canElicit, type McpCallContext } from './tool-calls.js';

/*
 * The session revisions (2025-11-25 back to 2024-11-05) over Streamable HTTP: initialize opens a
 * session kept in the shared state, each later POST names it. A tool call that asks nothing is
 * answered by the endpoint (answerWithoutSdkServer); the rest goes to a fresh SDK v1 server, over a
 * plain JSON answer, or over the SDK's stream when a write asks the user for approval.
 */

export interface SessionLeg {
  post(request: FastifyRequest, reply: FastifyReply, admitted: Admitted): Promise<FastifyReply>;
  /** Ends the session the request names. */
  delete(request: FastifyRequest, reply: FastifyReply, principal: Principal): Promise<FastifyReply>;
  /** Pending approvals would otherwise hold their streams (and the close) open until they time out. */
  close(): void;
}

interface ServedCall extends Admitted {
  session: McpSession;
  request: JSONRPCRequest;
  /** The request initialized the session: its id goes out in Mcp-Session-Id. */
  created: boolean;
}

/** A write to a client that can show a form may ask the user on the request's stream (callTool decides whether it does). */
const asksOnStream = (session: McpSession, request: JSONRPCRequest) => canElicit(session.clientCapabilities) && calledTool(request)?.readOnly === false;

/** What the session leg's steps share. */
interface Leg {
  core: McpDeps;
  metrics: McpMetrics;
  admission: Admission;
  sessions: SessionStore;
  replies: ClientReplies;
  sessionLimit: ReturnType<typeof rateLimiter>;
}

export function createSessionLeg(core: McpDeps, metrics: McpMetrics, admission: Admission): SessionLeg {
  const leg: Leg = {
    core,
    metrics,
    admission,
    // Session records live in the shared state, so any instance serves any session's next request.
    sessions: sharedSessionStore(core.shared),
    replies: new ClientReplies(),
    // Sessions are records in the shared state: a principal opening them without end would fill it.
    // Creation per hour is bounded, so live sessions are too (at most twice the limit, with the idle TTL of an hour).
    sessionLimit: rateLimiter(core, { name: 'mcp_sessions', limit: core.config.mcpSessionsPerHour, windowSeconds: 60 * 60 }),
  };
  return {
    post: (request, reply, admitted) => post(leg, request, reply, admitted),
    async delete(request, reply, principal) {
      const session = await boundSession(leg, request, reply, principal);
      if (!session) return reply;
      await leg.sessions.delete(session.id);
      leg.replies.end(session.id);
      return reply.status(204).send();
    },
    close: () => leg.replies.end(),
  };
}

const callContext = ({ core, metrics }: Leg, request: FastifyRequest, principal: Principal): McpCallContext => ({ core, principal, requestId: request.id, metrics, log: request.log });

/** The session the request names, if it exists and belongs to this principal; otherwise the refusal is sent. */
async function boundSession(leg: Leg, request: FastifyRequest, reply: FastifyReply, principal: Principal): Promise<McpSession | undefined> {
  const id = header(request, 'mcp-session-id');
  if (!id) {
    void refuse(reply, 400, 'session_id_required', 'Mcp-Session-Id header is required: initialize first');
    return undefined;
  }
  const session = await leg.sessions.get(id);
  // Another principal's session answers as unknown: a session id reveals nothing to whoever holds it.
  if (!session || session.boundTo !== principalBinding(principal)) {
    void refuse(reply, 404, 'session_not_found', 'Session not found: initialize a new session', SESSION_NOT_FOUND);
    return undefined;
  }
  return session;
}

/**
 * The answer to a session request that needs no SDK server, as JSON text: a tool call whose name is
 * no string, or one that asks nothing (see answerWithoutSdkServer); undefined for the rest.
 */
function answerDirectly(context: McpCallContext, session: McpSession, request: JSONRPCRequest): Promise<string | undefined> {
  if (request.method === 'tools/call' && typeof request.params?.name !== 'string') {
    // The SDK would answer an internal error (-32603) for the client's mistake.
    return Promise.resolve(errorAnswer(request.id, INVALID_PARAMS, 'params.name must be a tool name (a string)'));
  }
  return answerWithoutSdkServer(context, request, session.clientCapabilities);
}

async function connectedServer(context: McpCallContext, session: McpSession): Promise<{ server: Server; transport: JsonResponseTransport }> {
  const server = createMcpServer(context, session.clientCapabilities);
  const transport = new JsonResponseTransport();
  await server.connect(transport);
  return { server, transport };
}

/** Opens a session for an initialize request, within the principal's hourly allowance, and answers it. */
async function open(leg: Leg, request: FastifyRequest, reply: FastifyReply, admitted: Admitted, initialize: InitializeRequest & JSONRPCRequest): Promise<FastifyReply> {
  const boundTo = principalBinding(admitted.principal);
  try {
    await leg.sessionLimit(reply, { principal: boundTo });
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 429) throw error;
    return refuse(reply, 429, error.code, error.message);
  }
  const version = negotiateVersion(initialize.params.protocolVersion);
  const session: McpSession = {
    id: newSessionId(),
    boundTo,
    protocolVersion: version,
    clientCapabilities: capabilitiesInRevision(version, initialize.params.capabilities),
    clientInfo: initialize.params.clientInfo,
    createdAt: leg.core.now().getTime(),
  };
  await leg.sessions.create(session);
  return serve(leg, request, reply, { ...admitted, session, request: initialize, created: true });
}

/** Hands the request to a fresh SDK server and transport; the session itself is ours. */
async function serve(leg: Leg, request: FastifyRequest, reply: FastifyReply, call: ServedCall): Promise<FastifyReply> {
  const { session } = call;
  const context = callContext(leg, request, call.principal);
  hijackKeepingHeaders(reply);
  if (call.created) reply.raw.setHeader('mcp-session-id', session.id);

  if (!asksOnStream(session, call.request)) {
    const { server, transport } = await connectedServer(context, session);
    reply.raw.on('close', () => void server.close());
    const answer = await transport.answer(call.request, { requestInfo: { headers: request.headers } });
    if (answer) reply.raw.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    return reply;
  }
  const server = createMcpServer(context, session.clientCapabilities);
  // A write that asks the user for approval needs the SDK's stream to ask on. While it waits on the
  // user it holds no place in flight: the user's answer comes back in a POST of its own, which needs one.
  call.release();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  const forget = leg.replies.attach(transport, session.id);
  await server.connect(transport);
  reply.raw.on('close', () => {
    forget();
    void server.close();
  });
  await transport.handleRequest(request.raw, reply.raw, request.body);
  return reply;
}

/**
 * A JSON-RPC batch of a revision that has them, within the limits: the body's size (as any POST),
 * MCP_BATCH_MAX_MESSAGES messages, and the one place in flight the POST holds, its calls run one
 * after another. Requests are answered in one array, in order; an element that is no message, or
 * is initialize, gets its own error. A call needing a scope the grant lacks refuses the whole batch
 * with the step-up challenge before any call runs. Such revisions have no elicitation (see
 * capabilitiesInRevision), so no call here asks for approval on a stream.
 */
async function postBatch(leg: Leg, request: FastifyRequest, reply: FastifyReply, principal: Principal, session: McpSession, elements: unknown[]): Promise<FastifyReply> {
  if (elements.length === 0) return refuse(reply, 400, 'empty_batch', 'A JSON-RPC batch must hold at least one message', INVALID_REQUEST);
  if (elements.length > MCP_BATCH_MAX_MESSAGES) {
    const message = `A JSON-RPC batch may hold at most ${MCP_BATCH_MAX_MESSAGES} messages; this one holds ${elements.length}: send the rest in another POST`;
    return refuse(reply, 400, 'batch_too_large', message, INVALID_REQUEST);
  }
  const messages = elements.map(parseBody);
  for (const message of messages) {
    if (message && isRequest(message) && leg.admission.refusedForScope(reply, principal, message)) return reply;
  }
  const context = callContext(leg, request, principal);
  let sdk: { server: Server; transport: JsonResponseTransport } | undefined;
  const answers: string[] = [];
  try {
    for (const [index, message] of messages.entries()) {
      // Between two calls other requests get their turn: a batch costs the instance what as many POSTs would.
      if (index > 0) await yieldToOtherRequests();
      if (!message) {
        answers.push(errorAnswer(null, INVALID_REQUEST, 'Each element of a batch must be a JSON-RPC 2.0 message'));
      } else if (!isRequest(message)) {
        if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) leg.replies.deliver(session.id, message);
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

/** A POST of a session revision: initialize, a batch, or one message of an open session. */
async function post(leg: Leg, request: FastifyRequest, reply: FastifyReply, admitted: Admitted): Promise<FastifyReply> {
  const { principal } = admitted;
  const accept = header(request, 'accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return refuse(reply, 406, 'not_acceptable', 'Not Acceptable: Accept must list both application/json and text/event-stream');
  }
  if (Array.isArray(request.body)) {
    // A batch belongs to a session (initialize may not be in one), whose revision decides.
    const session = await boundSession(leg, request, reply, principal);
    if (!session) return reply;
    if (!acceptsBatches(session.protocolVersion)) {
      return refuse(reply, 400, 'batch_not_supported', `JSON-RPC batches are not part of MCP ${session.protocolVersion}: send one message per POST`, INVALID_REQUEST);
    }
    return postBatch(leg, request, reply, principal, session, request.body as unknown[]);
  }
  const message = parseBody(request.body);
  if (!message) return refuse(reply, 400, 'invalid_json_rpc', 'The body must be a JSON-RPC 2.0 message', PARSE_ERROR);
  const initialize = initializeRequest(message);
  if (initialize) return open(leg, request, reply, admitted, initialize);

  const session = await boundSession(leg, request, reply, principal);
  if (!session) return reply;
  if (!isRequest(message)) {
    // A notification, or the client's reply to one of our requests: nothing to answer.
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) leg.replies.deliver(session.id, message);
    return reply.status(202).send();
  }
  if (leg.admission.refusedForScope(reply, principal, message)) return reply;
  const answer = await answerDirectly(callContext(leg, request, principal), session, message);
  if (answer) return reply.type('application/json').send(answer);
  return serve(leg, request, reply, { ...admitted, session, request: message, created: false });
}
