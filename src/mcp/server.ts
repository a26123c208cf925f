import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type ClientCapabilities,
  type JSONRPCRequest,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { AnyOperation } from '../operations/operation.js';
import { publicBaseUrl } from './discovery.js';
import { answerToolCall, approvalRequest, callTool, declinedResult, refusalOf, serverIdentity, type McpCallContext } from './tool-calls.js';
import { listTools, toolOperation, type ToolResult } from './tools.js';
import { PROTOCOL_VERSIONS } from './revisions.js';

/*
 * The server of the session revisions (2025-11-25 back to 2024-11-05) on SDK v1: sessions opened by
 * initialize, approvals asked by a server-initiated elicitation/create on the request's stream.
 */


type SessionVersion = (typeof PROTOCOL_VERSIONS)[number];

/**
 * What a revision's messages may carry, where the revisions differ for this server. JSON-RPC batches
 * (several messages in one POST) came with 2025-03-26 and went with 2025-06-18; they are served under
 * the endpoint's batch limits (src/mcp/limits.ts, session-leg.ts). Elicitation, which approvals ask through,
 * came with 2025-06-18: a client of an older revision cannot answer it, whatever it declares.
 */
const REVISIONS: Record<SessionVersion, { batches: boolean; elicitation: boolean }> = {
  '2025-11-25': { batches: false, elicitation: true },
  '2025-06-18': { batches: false, elicitation: true },
  '2025-03-26': { batches: true, elicitation: false },
  '2024-11-05': { batches: false, elicitation: false },
};

const revision = (version: string) => REVISIONS[version as SessionVersion] as (typeof REVISIONS)[SessionVersion] | undefined;

export function acceptsBatches(version: string): boolean {
  return revision(version)?.batches ?? false;
}

/** The client's capabilities as its revision defines them: elicitation declared before it existed is dropped. */
export function capabilitiesInRevision(version: string, declared: ClientCapabilities): ClientCapabilities {
  if (revision(version)?.elicitation !== false || declared.elicitation === undefined) return declared;
  const { elicitation: _undefinedInRevision, ...defined } = declared;
  return defined;
}

/** The client's version when it is served here, else the newest (the client then accepts it or disconnects). */
export function negotiateVersion(requested: string): string {
  return (PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : PROTOCOL_VERSIONS[0];
}

// A server is built per request; compiling a validator (Ajv with formats) for each would dominate the call.
const SHARED_VALIDATOR = new AjvJsonSchemaValidator();

/** A client waiting longer than this for the user's answer gets a timeout, and the write does not run. */
const APPROVAL_TIMEOUT_MS = 5 * 60 * 1000;

type SendRequest = RequestHandlerExtra<ServerRequest, ServerNotification>['sendRequest'];

/** Undefined when the user approved; otherwise the result saying why nothing ran (declined, cancelled, unchecked, no answer). */
async function askApproval(ctx: McpCallContext, op: AnyOperation, input: unknown, sendRequest: SendRequest): Promise<ToolResult | undefined> {
  let refusal: string | undefined;
  try {
    const answer = await sendRequest({ method: 'elicitation/create', params: approvalRequest(op, input) }, ElicitResultSchema, {
      timeout: APPROVAL_TIMEOUT_MS,
    });
    refusal = refusalOf(answer);
  } catch {
    // A timeout, a client error or an ended session: without a yes, nothing runs.
    refusal = 'no answer';
  }
  return refusal === undefined ? undefined : declinedResult(ctx, op, refusal);
}

/**
 * The answer to a session tools/call that needs no SDK server (see answerToolCall), as JSON text;
 * undefined for any other request, and for a call SDK v1 would not take as a CallToolRequest.
 */
export async function answerWithoutSdkServer(ctx: McpCallContext, request: JSONRPCRequest, clientCapabilities: ClientCapabilities): Promise<string | undefined> {
  if (request.method !== 'tools/call') return undefined;
  const parsed = CallToolRequestSchema.safeParse(request);
  return parsed.success ? answerToolCall(ctx, request.id, parsed.data.params, clientCapabilities) : undefined;
}

/** One server per HTTP request, for one principal and the capabilities its session declared at initialize. */
export function createMcpServer(ctx: McpCallContext, clientCapabilities: ClientCapabilities): Server {
  const { serverInfo, ...offer } = serverIdentity(ctx.core);
  const server = new Server(serverInfo, { ...offer, jsonSchemaValidator: SHARED_VALIDATOR });

  // Replaces the SDK's negotiation, which would accept versions this endpoint does not support.
  server.setRequestHandler(InitializeRequestSchema, (request) => ({
    protocolVersion: negotiateVersion(request.params.protocolVersion),
    serverInfo,
    ...offer,
  }));

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(ctx.principal, publicBaseUrl(ctx.core)) }));

  server.setRequestHandler(CallToolRequestSchema, (request, extra): Promise<ToolResult> => {
    const op = toolOperation(request.params.name);
    if (!op) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    return callTool(ctx, op, request.params.arguments, {
      capabilities: clientCapabilities,
      ask: (asked, input) => askApproval(ctx, asked, input, extra.sendRequest),
    });
  });

  return server;
}
