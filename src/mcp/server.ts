import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type ClientCapabilities,
  type ElicitRequest,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { Core } from '../core.js';
import { AppError } from '../errors.js';
import { invokeOperation, type AnyOperation } from '../operations/operation.js';
import { packageVersion } from '../version.js';
import { outcomeOfStatus, type McpMetrics } from './metrics.js';
import { publicBaseUrl } from './discovery.js';
import { icon } from './icons.js';
import { canCall, errorResult, listTools, successResult, toAppError, toolOperation } from './tools.js';

/** The protocol versions this endpoint speaks; the newest is offered to a client asking for another. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'] as const;

export function negotiateVersion(requested: string): string {
  return (PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : PROTOCOL_VERSIONS[0];
}

const SERVER_CAPABILITIES = { tools: { listChanged: false } };

// A server is built per request; compiling a validator (Ajv with formats) for each would dominate the call.
const SHARED_VALIDATOR = new AjvJsonSchemaValidator();

const SERVER_INFO = { name: 'device-lifecycle-service', title: 'Device Lifecycle Service', version: packageVersion() };

const INSTRUCTIONS =
  'Manage company IT equipment: employees, orders, devices, teams and company addresses. Call whoami first to see ' +
  'which tools this credential may use. Validate an order with validate_order_constraints before create_order. ' +
  'Write tools ask the user for approval when the client supports it.';

/** A client waiting longer than this for the user's answer gets a timeout, and the write does not run. */
const APPROVAL_TIMEOUT_MS = 5 * 60 * 1000;

export interface McpCallContext {
  core: Core;
  principal: Principal;
  requestId: string;
  /** Capabilities the client declared at initialize (they decide whether writes ask for approval). */
  clientCapabilities: ClientCapabilities;
  metrics: McpMetrics;
  log: FastifyBaseLogger;
}

/** Form elicitation: declared as `{}` (before 2025-11-25) or with `form`. */
export function canElicit(capabilities: ClientCapabilities): boolean {
  const elicitation = capabilities.elicitation;
  return elicitation !== undefined && (Object.keys(elicitation).length === 0 || elicitation.form !== undefined);
}

/** Secrets in the input (a device PIN) are masked in the prompt: the user approves the action, not the value. */
const SECRET_FIELD = /pin|password|secret/i;

function approvalRequest(op: AnyOperation, input: unknown): ElicitRequest['params'] {
  const shown = JSON.stringify(input, (key, value: unknown) => (SECRET_FIELD.test(key) ? '••••' : value), 2);
  return {
    message: `Approve "${op.title}" (${op.name})? ${op.description}\n\nIt will run with:\n${shown}`,
    requestedSchema: {
      type: 'object',
      properties: {
        approve: { type: 'boolean', title: `Run ${op.name}`, description: 'Uncheck to decline: nothing is done', default: true },
      },
      required: ['approve'],
    },
  };
}

type SendRequest = RequestHandlerExtra<ServerRequest, ServerNotification>['sendRequest'];

/** Undefined when the user approved; otherwise why not (declined, cancelled, unchecked, no answer). */
async function askApproval(op: AnyOperation, input: unknown, sendRequest: SendRequest): Promise<string | undefined> {
  try {
    const answer = await sendRequest({ method: 'elicitation/create', params: approvalRequest(op, input) }, ElicitResultSchema, {
      timeout: APPROVAL_TIMEOUT_MS,
    });
    if (answer.action !== 'accept') return answer.action;
    return answer.content?.approve === false ? 'unchecked' : undefined;
  } catch {
    // A timeout, a client error or an ended session: without a yes, nothing runs.
    return 'no answer';
  }
}

/**
 * One server per HTTP request, for one principal: the SDK parses and answers the JSON-RPC, the
 * operation table does the work through invokeOperation, the same checks as REST.
 */
export function createMcpServer(ctx: McpCallContext): Server {
  const server = new Server(SERVER_INFO, { capabilities: SERVER_CAPABILITIES, instructions: INSTRUCTIONS, jsonSchemaValidator: SHARED_VALIDATOR });

  // Replaces the SDK's negotiation, which would accept versions this endpoint does not support.
  server.setRequestHandler(InitializeRequestSchema, (request) => ({
    protocolVersion: negotiateVersion(request.params.protocolVersion),
    capabilities: SERVER_CAPABILITIES,
    serverInfo: { ...SERVER_INFO, icons: icon(publicBaseUrl(ctx.core), 'server') },
    instructions: INSTRUCTIONS,
  }));

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(ctx.principal, publicBaseUrl(ctx.core)) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const op = toolOperation(request.params.name);
    if (!op) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const input: unknown = request.params.arguments ?? {};
    try {
      // Ask only for a call that would run: a denied or invalid one fails the same way without a prompt.
      if (!op.readOnly && canElicit(ctx.clientCapabilities) && canCall(ctx.principal, op) && op.input.safeParse(input).success) {
        const refusal = await askApproval(op, input, extra.sendRequest);
        if (refusal !== undefined) {
          ctx.metrics.recordToolCall(op.name, 'declined');
          return errorResult(new AppError(409, 'approval_declined', `The user did not approve ${op.name} (${refusal}); nothing was done`));
        }
      }
      const data = await invokeOperation(op, { core: ctx.core, principal: ctx.principal, requestId: ctx.requestId }, input);
      ctx.metrics.recordToolCall(op.name, 'ok');
      return successResult(data);
    } catch (error) {
      const appError = toAppError(error);
      if (appError.status >= 500) ctx.log.error({ err: error, tool: op.name }, 'MCP tool call failed');
      ctx.metrics.recordToolCall(op.name, outcomeOfStatus(appError.status));
      return errorResult(appError);
    }
  });

  return server;
}
