import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../access/principal.js';
import type { McpDeps } from './deps.js';
import { AppError } from '../kit/errors.js';
import { invokeOperation, type AnyOperation } from '../operations/operation.js';
import { packageVersion } from '../kit/version.js';
import { publicBaseUrl } from './discovery.js';
import { icon } from './icons.js';
import { outcomeOfStatus, type McpMetrics } from './metrics.js';
import { toAppError } from '../http/errors.js';
import { canCall, errorResult, successResult, toolAnswerJson, toolOperation, type ResultFields, type ToolResult } from './tools.js';

/*
 * What every protocol era shares: who the server is, what it tells the model, and the one way a tool
 * call runs (callTool), whichever revision and path brings it. The eras differ only in how they
 * decode the call, write its answer and ask the user (server.ts, modern.ts).
 */

const SERVER_INFO = { name: 'device-lifecycle-service', title: 'Device Lifecycle Service', version: packageVersion() };

const INSTRUCTIONS =
  'Manage company IT equipment: employees, orders, devices, teams and company addresses. Call whoami first to see ' +
  'which tools this credential may use. Validate an order with validate_order_constraints before create_order. ' +
  'Write tools ask the user for approval when the client supports it.';

/** Who the server is and what it offers, as initialize (2025) and server/discover (2026-07-28) both say it. */
export function serverIdentity(core: McpDeps) {
  return {
    serverInfo: { ...SERVER_INFO, icons: icon(publicBaseUrl(core), 'server') },
    capabilities: { tools: { listChanged: false } },
    instructions: INSTRUCTIONS,
  };
}

export interface McpCallContext {
  core: McpDeps;
  principal: Principal;
  requestId: string;
  metrics: McpMetrics;
  log: FastifyBaseLogger;
}

/** The part of a client's declared capabilities that decides approvals (every era spells it the same). */
export interface ElicitationCapability {
  elicitation?: { form?: unknown; [key: string]: unknown };
}

/** Form elicitation: declared as `{}` (before 2025-11-25) or with `form`. */
export function canElicit(capabilities: ElicitationCapability | undefined): boolean {
  const elicitation = capabilities?.elicitation;
  return elicitation !== undefined && (Object.keys(elicitation).length === 0 || elicitation.form !== undefined);
}

/**
 * How a revision asks the user to approve a write: SDK v1 by an elicitation/create on the request's
 * stream (server.ts), SDK v2 by an input-required result answered in a retry (modern.ts).
 */
export interface Approval<Asked> {
  /** What the client declared: only a client that can show a form is asked. */
  capabilities: ElicitationCapability | undefined;
  /** A retry answering an earlier question: checked whatever the client declares now. */
  answering?: boolean;
  /** Undefined when the user approved this very call; otherwise what to answer instead (nothing ran). */
  ask(op: AnyOperation, input: unknown): Promise<Asked | undefined>;
}

/**
 * A tool call, whatever the revision and whichever path brought it: a write asks for approval when
 * the client can show a form and the call would run (a denied or invalid call fails the same way
 * without a prompt); the operation then runs through the operation table, with the input validation
 * and capability check REST has; a failure becomes the error result REST would answer, and a 5xx is
 * logged. The protocol edges only decode the request and write this result.
 */
export async function callTool<Asked = never>(ctx: McpCallContext, op: AnyOperation, args: unknown, approval: Approval<Asked>): Promise<ToolResult | Asked> {
  const input = args ?? {};
  const asks = !op.readOnly && canElicit(approval.capabilities) && canCall(ctx.principal, op) && op.input.safeParse(input).success;
  if (approval.answering === true || asks) {
    const asked = await approval.ask(op, input);
    if (asked !== undefined) return asked;
  }
  try {
    const data = await invokeOperation(op, { core: ctx.core, principal: ctx.principal, requestId: ctx.requestId }, input);
    ctx.metrics.recordToolCall(op.name, 'ok');
    return successResult(data);
  } catch (error) {
    const appError = toAppError(error);
    if (appError.status >= 500) ctx.log.error({ err: error, tool: op.name }, 'MCP tool call failed');
    ctx.metrics.recordToolCall(op.name, outcomeOfStatus(appError.status));
    return errorResult(appError);
  }
}

/** What callTool answers on the direct path for a call that would ask: handed to the SDK, which can ask. */
const ASKED_THROUGH_SDK = Symbol('asked through the SDK');
const askThroughSdk = async (): Promise<typeof ASKED_THROUGH_SDK> => ASKED_THROUGH_SDK;

/**
 * The JSON-RPC answer to a call of a known tool that asks nothing, as JSON text, written without an
 * SDK server (one built per request cost more than the call itself: docs/mcp.md, Benchmark), with
 * the result fields the revision's SDK stamps. Undefined hands the call to the SDK before anything
 * ran: an unknown tool, whose refusal is the SDK's, or a write to approve.
 */
export async function answerToolCall(
  ctx: McpCallContext,
  id: string | number,
  call: { name: string; arguments?: unknown },
  capabilities: ElicitationCapability | undefined,
  stamped?: ResultFields,
): Promise<string | undefined> {
  const op = toolOperation(call.name);
  if (!op) return undefined;
  const result = await callTool(ctx, op, call.arguments, { capabilities, ask: askThroughSdk });
  return result === ASKED_THROUGH_SDK ? undefined : toolAnswerJson(id, result, stamped);
}

/** Secrets in the input (a device PIN) are masked in the prompt: the user approves the action, not the value. */
const SECRET_FIELD = /pin|password|secret/i;

/** The form-mode elicitation that asks the user to approve one write. */
export function approvalRequest(op: AnyOperation, input: unknown) {
  const shown = JSON.stringify(input, (key, value: unknown) => (SECRET_FIELD.test(key) ? '••••' : value), 2);
  return {
    message: `Approve "${op.title}" (${op.name})? ${op.description}\n\nIt will run with:\n${shown}`,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        approve: { type: 'boolean' as const, title: `Run ${op.name}`, description: 'Uncheck to decline: nothing is done', default: true },
      },
      required: ['approve'],
    },
  };
}

/** Undefined when the user approved; otherwise why not (declined, cancelled, unchecked). */
export function refusalOf(answer: { action: string; content?: Record<string, unknown> }): string | undefined {
  if (answer.action !== 'accept') return answer.action;
  return answer.content?.approve === false ? 'unchecked' : undefined;
}

export function declinedResult(ctx: McpCallContext, op: AnyOperation, refusal: string): ToolResult {
  ctx.metrics.recordToolCall(op.name, 'declined');
  return errorResult(new AppError(409, 'approval_declined', `The user did not approve ${op.name} (${refusal}); nothing was done`));
}
