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
import { canCall, errorResult, successResult, toolOperation, type ToolResult } from './tools.js';

/*
 * What every protocol era's server shares: who it is, what it tells the model, and how one tool
 * call runs (the operation table through invokeOperation, the same checks as REST) and when a
 * write asks the user first. The eras differ only in how they ask (server.ts, modern.ts).
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
 * A write asks for approval when the client can show a form, and only when it would run: a
 * denied or invalid call fails the same way without a prompt.
 */
export function asksApproval(ctx: McpCallContext, op: AnyOperation, input: unknown, capabilities: ElicitationCapability | undefined): boolean {
  return !op.readOnly && canElicit(capabilities) && canCall(ctx.principal, op) && op.input.safeParse(input).success;
}

/**
 * A tool call the endpoint answers without building an SDK server: a known tool, and nothing to ask
 * the user. Undefined sends the call to the SDK (unknown tools, approvals). Building a server per
 * request cost more than the call itself; each era's direct answer is tested equal to its SDK's.
 */
export function directToolCall(
  ctx: McpCallContext,
  name: string,
  args: unknown,
  capabilities: ElicitationCapability | undefined,
): { op: AnyOperation; input: unknown } | undefined {
  const op = toolOperation(name);
  const input = args ?? {};
  return op && !asksApproval(ctx, op, input, capabilities) ? { op, input } : undefined;
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

/** Runs the operation; a failure becomes the error result REST would answer, and a 5xx is logged. */
export async function runTool(ctx: McpCallContext, op: AnyOperation, input: unknown): Promise<ToolResult> {
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
