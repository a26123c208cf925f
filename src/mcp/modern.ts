import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  isSpecType,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
  Server,
  type AuthInfo,
  type InputRequiredResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import type { Principal } from '../access/principal.js';
import type { McpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';
import { noteErrorCode } from '../http/request-log.js';
import type { AnyOperation } from '../operations/operation.js';
import { publicBaseUrl } from './discovery.js';
import type { McpMetrics } from './metrics.js';
import { isJsonObject } from '../kit/json-object.js';
import { header, MODERN_PROTOCOL_VERSIONS, PROTOCOL_VERSIONS } from './revisions.js';
import { principalBinding } from './sessions.js';
import { answerToolCall, approvalRequest, callTool, declinedResult, refusalOf, serverIdentity, type ElicitationCapability, type McpCallContext } from './tool-calls.js';
import { errorResult, listTools, resultFields, toolOperation, type ToolResult } from './tools.js';

/*
 * The 2026-07-28 revision on SDK v2: no initialize and no session; every request carries its
 * protocol version and the client's capabilities in `_meta`, clients learn about the server from
 * server/discover, and a write asks for approval by returning an input-required result that the
 * client answers in a retry of the same call (multi round-trip requests, MRTR). The SDK answers
 * the envelope, discover, version and header errors; authentication, Origin and scope checks
 * stay ours and run before it (admission.ts).
 */


/**
 * Where this POST goes: `direct` for a plain 2026-07-28 tool call (see plainToolCall), which the leg
 * may answer without the SDK; otherwise the SDK's classification: `modern` when it carries a
 * well-formed `_meta` claim; `refused` when it is a modern-era refusal (a header naming 2026-07-28
 * over a body without the envelope or that is no request at all, such as a batch, a posted reply or
 * an id neither string nor number; a malformed envelope; a mismatch), which the SDK answers; undefined
 * for everything else (initialize, 2025 sessions, posted replies, bodies that are not JSON-RPC at all),
 * which stays on the 2025 endpoint, whose answers every client understands.
 */
export function modernRoute(request: FastifyRequest): ModernRoute | undefined {
  if (!mayClaimModern(request)) return undefined;
  if (plainToolCall(request)) return 'direct';
  const outcome = classifyInboundRequest({
    httpMethod: request.method,
    body: request.body,
    protocolVersionHeader: header(request, 'mcp-protocol-version'),
    mcpMethodHeader: header(request, 'mcp-method'),
    mcpNameHeader: header(request, 'mcp-name'),
  });
  if (outcome.kind === 'modern') return 'modern';
  if (outcome.kind === 'reject' && outcome.rung !== 'jsonrpc-shape') return 'refused';
  // The header put the POST in 2026-07-28, which has no sessions to fall back on: its own Invalid Request.
  return (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(header(request, 'mcp-protocol-version') ?? '') ? 'refused' : undefined;
}

export type ModernRoute = 'direct' | 'modern' | 'refused';

/**
 * The request line's code of an HTTP-level refusal by the SDK, whose body names only a JSON-RPC
 * code: by status, in the words the endpoint's own refusals use.
 */
const SDK_REFUSAL_CODES: Readonly<Record<number, string>> = {
  400: 'invalid_mcp_request',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  413: 'body_too_large',
  415: 'unsupported_media_type',
};

/** Envelopes (as JSON) and whether the SDK accepts them; a client sends the same one with every call. */
const envelopeVerdicts = new Map<string, boolean>();
const ENVELOPE_VERDICTS_KEPT = 1_000;
const ENVELOPE_CACHED_UP_TO_CHARS = 4_096;

/**
 * Whether the SDK's classification accepts `meta` as a 2026-07-28 envelope: its verdict on a probe call
 * that carries it and is otherwise well-formed, kept per envelope. Classifying each request cost more
 * than the tool call (the SDK first parses a request as a response of either kind, which fails).
 */
function envelopeAccepted(meta: Record<string, unknown>): boolean {
  const key = JSON.stringify(meta);
  const known = envelopeVerdicts.get(key);
  if (known !== undefined) return known;
  const probe = { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'probe', _meta: meta } };
  const verdict =
    classifyInboundRequest({
      httpMethod: 'POST',
      body: probe,
      protocolVersionHeader: MODERN_PROTOCOL_VERSIONS[0],
      mcpMethodHeader: 'tools/call',
      mcpNameHeader: 'probe',
    }).kind === 'modern';
  if (key.length <= ENVELOPE_CACHED_UP_TO_CHARS) {
    if (envelopeVerdicts.size >= ENVELOPE_VERDICTS_KEPT) envelopeVerdicts.clear();
    envelopeVerdicts.set(key, verdict);
  }
  return verdict;
}

/**
 * A 2026-07-28 tools/call the SDK would classify as modern, checked without its classification: the
 * headers name the version, method and tool exactly as the body does, the body is a JSON-RPC request
 * and a CallToolRequest by the SDK's own schemas (and no reply: the SDK tests that first), the envelope
 * is one the SDK accepts, and it is no approval's retry (that one needs the SDK's request state).
 */
function plainToolCall(request: FastifyRequest): boolean {
  const { body } = request;
  if (!isJsonObject(body)) return false;
  const params = isJsonObject(body.params) ? body.params : undefined;
  const envelope = params?._meta;
  return (
    header(request, 'mcp-protocol-version') === MODERN_PROTOCOL_VERSIONS[0] &&
    isJsonObject(envelope) &&
    envelope[PROTOCOL_VERSION_META_KEY] === MODERN_PROTOCOL_VERSIONS[0] &&
    header(request, 'mcp-method') === 'tools/call' &&
    typeof params?.name === 'string' &&
    header(request, 'mcp-name') === params.name &&
    !('requestState' in params) &&
    !('inputResponses' in params) &&
    !('result' in body) &&
    !('error' in body) &&
    isSpecType.JSONRPCRequest(body) &&
    isSpecType.CallToolRequest(body) &&
    envelopeAccepted(envelope)
  );
}

/**
 * False when the SDK's classification could only say 2025 (or not JSON-RPC): a single message whose
 * `_meta` holds no protocol-version claim, under no header or a 2025 one. The classification parses
 * the body against four JSON-RPC schemas, two of them failing, on every 2025 session call; a CPU
 * profile showed it. A claim or any other header still goes to the SDK; a batch never reaches the
 * modern leg (the SDK refuses modern messages in one), nor does a body that is not an object.
 */
function mayClaimModern(request: FastifyRequest): boolean {
  const version = header(request, 'mcp-protocol-version');
  if (version !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(version)) return true;
  const { body } = request;
  if (!isJsonObject(body)) return false;
  const meta = isJsonObject(body.params) ? body.params._meta : undefined;
  return isJsonObject(meta) && PROTOCOL_VERSION_META_KEY in meta;
}

const FORWARDED_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name'];

/** What tools/list and server/discover may be cached for (SEP-2549); the list's `_meta` varies per credential. */
const CACHE_HINTS = {
  'server/discover': { ttlMs: 60 * 60 * 1000, cacheScope: 'public' as const },
  'tools/list': { ttlMs: 5 * 60 * 1000, cacheScope: 'private' as const },
};

/** An approval answered later than this is refused: the call has to be made again. */
const APPROVAL_STATE_TTL_SECONDS = 5 * 60;

/** What an approval's requestState carries: which call it approves, and a nonce that makes it single-use. */
interface ApprovalState {
  nonce: string;
  call: string;
}

/** The call an approval belongs to: the tool and its arguments, canonically (key order does not matter). */
function callDigest(op: AnyOperation, input: unknown): string {
  const canonical = JSON.stringify(input, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : value,
  );
  return createHash('sha256').update(op.name).update('\0').update(canonical ?? '').digest('base64url');
}

interface ModernRequestInfo extends Record<string, unknown> {
  principal: Principal;
  requestId: string;
  log: FastifyBaseLogger;
}

function requestInfoOf(authInfo: AuthInfo | undefined): ModernRequestInfo {
  const info = authInfo?.extra as ModernRequestInfo | undefined;
  if (!info) throw new Error('modern MCP request served without its principal');
  return info;
}

// One validator for every per-request server, as in the 2025 leg: compiling one per request would dominate the call.
const SHARED_VALIDATOR = new AjvJsonSchemaValidator();

export interface ModernLeg {
  serve(request: FastifyRequest, reply: FastifyReply, principal: Principal, route: ModernRoute): Promise<FastifyReply>;
  close(): Promise<void>;
}

export function createModernLeg(core: McpDeps, metrics: McpMetrics): ModernLeg {
  // Signed, bound to the principal, and expiring: a state minted for one user's call cannot approve another's.
  const approvals = createRequestStateCodec<ApprovalState>({
    key: createHmac('sha256', core.secretKey).update('mcp-request-state').digest(),
    ttlSeconds: APPROVAL_STATE_TTL_SECONDS,
    bind: (ctx) => principalBinding(requestInfoOf(ctx.http?.authInfo).principal),
  });

  // Who the server is does not change while it runs: built once, not per request.
  const { serverInfo, ...offer } = serverIdentity(core);
  // The fields the SDK stamps on a completed result.
  const completed = resultFields({ resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: serverInfo } });

  function createServer(ctx: McpCallContext): Server {
    const server = new Server(serverInfo, {
      ...offer,
      cacheHints: CACHE_HINTS,
      requestState: { verify: approvals.verify },
      jsonSchemaValidator: SHARED_VALIDATOR,
    });
    server.setRequestHandler('tools/list', () => ({ tools: listTools(ctx.principal, publicBaseUrl(core)) }));
    server.setRequestHandler('tools/call', (request, callCtx): Promise<ToolResult | InputRequiredResult> => {
      const op = toolOperation(request.params.name);
      if (!op) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      return callTool(ctx, op, request.params.arguments, {
        capabilities: server.getClientCapabilities(),
        // A retry carrying an approval's state is one whatever capabilities it declares now: its nonce is used up.
        answering: callCtx.mcpReq.requestState<ApprovalState>() !== undefined,
        ask: (asked, input) => approve(ctx, asked, input, callCtx),
      });
    });
    return server;
  }

  /**
   * Undefined when the user approved this very call; otherwise the answer to send instead: the
   * question (input required), or why nothing ran. An approval is used once: its nonce is claimed
   * in the shared state, so a replayed retry cannot repeat the write on any instance.
   */
  async function approve(
    ctx: McpCallContext,
    op: AnyOperation,
    input: unknown,
    callCtx: ServerContext,
  ): Promise<ToolResult | InputRequiredResult | undefined> {
    const call = callDigest(op, input);
    const state = callCtx.mcpReq.requestState<ApprovalState>();
    if (state !== undefined && state.call !== call) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'requestState belongs to another call: send the arguments it was issued for');
    }
    const answer = inputResponse(callCtx.mcpReq.inputResponses, 'approval');
    if (state === undefined || answer.kind !== 'elicit') {
      const requestState = await approvals.mint(state ?? { nonce: randomUUID(), call }, callCtx);
      return inputRequired({ inputRequests: { approval: inputRequired.elicit(approvalRequest(op, input)) }, requestState });
    }
    if (!(await core.shared.claim(`mcp-approval:${state.nonce}`, APPROVAL_STATE_TTL_SECONDS))) {
      ctx.metrics.recordToolCall(op.name, 'conflict');
      return errorResult(new AppError(409, 'approval_used', `This approval of ${op.name} was already used; call the tool again to ask anew`));
    }
    const refusal = refusalOf(answer);
    return refusal === undefined ? undefined : declinedResult(ctx, op, refusal);
  }

  const handler = createMcpHandler(({ authInfo }) => createServer(callContextOf(requestInfoOf(authInfo))), {
    legacy: 'reject',
    onerror: (error) => core.logger.debug({ err: error }, 'MCP 2026-07-28 request refused'),
  });

  function callContextOf({ principal, requestId, log }: ModernRequestInfo): McpCallContext {
    return { core, principal, requestId, metrics, log };
  }

  /**
   * The answer to a plain tool call (see plainToolCall) that needs no SDK server (see answerToolCall),
   * stamped as SDK v2 stamps a result; undefined sends it to the SDK, which answers or refuses it.
   */
  function answerWithoutSdkServer(request: FastifyRequest, principal: Principal): Promise<string | undefined> {
    const { id, params } = request.body as { id: string | number; params: { name: string; arguments?: unknown; _meta: Record<string, unknown> } };
    const capabilities = params._meta[CLIENT_CAPABILITIES_META_KEY] as ElicitationCapability | undefined;
    return answerToolCall(callContextOf({ principal, requestId: request.id, log: request.log }), id, params, capabilities, completed);
  }

  return {
    async serve(request, reply, principal, route) {
      const direct = route === 'direct' ? await answerWithoutSdkServer(request, principal) : undefined;
      if (direct !== undefined) return reply.type('application/json').send(direct);
      // The SDK reads only the media type and its own routing headers; copying the rest would cost every call.
      const headers = new Headers();
      for (const name of FORWARDED_HEADERS) {
        const value = header(request, name);
        if (value !== undefined) headers.set(name, value);
      }
      const webRequest = new Request(`http://localhost${request.url}`, { method: 'POST', headers });
      const extra: ModernRequestInfo = { principal, requestId: request.id, log: request.log };
      const response = await handler.fetch(webRequest, {
        authInfo: { token: '', clientId: principalBinding(principal), scopes: [], extra },
        parsedBody: request.body,
      });
      void reply.status(response.status);
      if (response.status >= 400) noteErrorCode(request, SDK_REFUSAL_CODES[response.status] ?? 'mcp_request_refused');
      response.headers.forEach((value, name) => void reply.header(name, value));
      return reply.send(response.body === null ? undefined : await response.text());
    },
    close: () => handler.close(),
  };
}
