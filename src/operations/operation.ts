import type { z } from 'zod';
import type { Capability } from '../access/capabilities.js';
import { requireHumanAdmin, type Caller, type Principal } from '../access/principal.js';
import type { FirstUseRecorder } from '../access/first-use.js';
import type { DomainDeps } from '../domain/deps.js';
import { forbidden, validationError } from '../kit/errors.js';

/**
 * What a handler is given. Domain operations see the domain's dependencies only; the migration's
 * operations (legacy keys, shadow report) name MigrationDeps as C. Every surface passes the
 * composition root's Core, which is both, so the table may hold both (a handler is a method, so its
 * context type is bivariant).
 */
export interface OperationContext<C extends DomainDeps = DomainDeps> {
  core: C;
  principal: Principal;
  requestId: string;
}

/** What the runner itself needs beside the handler's context: where a key's first success is noted. */
type RunnerContext = OperationContext<DomainDeps & { keyFirstUse: Pick<FirstUseRecorder, 'record'> }>;

/**
 * One row of the operation table: the single definition from which REST routes, MCP tools,
 * CLI commands and the OpenAPI document are derived.
 */
export interface Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType, C extends DomainDeps = DomainDeps> {
  /** The MCP tool name, and the operation's identity everywhere else. */
  name: string;
  /** The `svc` command words: `<resource> <action>` (`company addresses list`), or one word (`whoami`). */
  cli: string;
  title: string;
  /**
   * What it does, when to use it, what it returns and what its failures mean, written for an AI
   * agent: it is what an MCP tool says, paid for in every conversation, so no more than a model needs.
   */
  description: string;
  /**
   * Reference for people, which REST (OpenAPI) and `svc` help add after the description: every rule
   * with its code, how a figure is computed. A tool leaves it out: a call that breaks a rule is told which.
   */
  details?: string;
  /** null only for whoami. */
  capability: Capability | null;
  /** Administration: a human admin only, never an integration's non-personal user (see requireHumanAdmin). */
  humanAdminOnly: boolean;
  readOnly: boolean;
  /** Write hints (MCP annotations): may it destroy data; is a repeat harmless. `svc` asks before a destructive call (or takes --yes). */
  destructive: boolean;
  /**
   * What `svc` shows of the record a destructive call changes when it asks for confirmation: a GET
   * path (its `:params` from the input) and the line describing its answer's data.
   */
  confirmWith?: { path: string; describe(data: unknown): string };
  idempotent: boolean;
  /** Reaches a system outside this service (MCP openWorldHint): the courier's API. */
  openWorld: boolean;
  method: 'GET' | 'POST' | 'PATCH';
  /** Fastify-style path; `:id` segments are fields of the input. */
  path: string;
  /** `spec` rows are the 27 operations of the interface spec; `extension` rows are REST/CLI only. */
  origin: 'spec' | 'extension';
  /** HTTP status of a success (201 for creations). */
  successStatus: 200 | 201;
  input: I;
  output: O;
  /**
   * How `svc` tables show the output's lists: per list field, the record fields most worth
   * seeing, most important first (a dotted path reads a nested field); the others follow while
   * the terminal has room. Declared once per resource with columnsOf and shared by its operations.
   */
  columns?: Readonly<Record<string, readonly string[]>>;
  // Method syntax keeps the handler bivariant, so specific operations fit the table's type.
  handler(ctx: OperationContext<C>, input: z.output<I>): Promise<z.input<O>>;
}

export type AnyOperation = Operation<z.ZodType, z.ZodType>;

/** A field of a record schema, or a dotted path into one of its nested records. */
type ColumnOf<S extends z.ZodObject> = { [K in keyof S['shape'] & string]: K | `${K}.${string}` }[keyof S['shape'] & string];

/** A resource's table columns, most important first, checked against its record schema. */
export function columnsOf<S extends z.ZodObject>(_record: S, columns: readonly ColumnOf<S>[]): readonly string[] {
  return columns;
}

/**
 * The module behind some handlers, loaded at their first call. The table's metadata (names, paths,
 * schemas, help) is what the CLI reads: it never loads the domain, SQL and gateway code that only
 * running an operation needs. After the first call this costs one resolved promise.
 */
export function onDemand<M>(load: () => Promise<M>): () => Promise<M> {
  let loaded: Promise<M> | undefined;
  return () => (loaded ??= load());
}

type Defaults = 'destructive' | 'idempotent' | 'openWorld' | 'origin' | 'successStatus' | 'humanAdminOnly';

export function defineOperation<I extends z.ZodType, O extends z.ZodType, C extends DomainDeps = DomainDeps>(
  op: Omit<Operation<I, O, C>, Defaults> & Partial<Pick<Operation<I, O, C>, Defaults>>,
): Operation<I, O, C> {
  return {
    destructive: false,
    idempotent: op.readOnly,
    openWorld: false,
    origin: 'spec',
    successStatus: 200,
    humanAdminOnly: false,
    ...op,
  };
}

/** The description people read (REST docs, `svc` help): the agent's text, then the reference details. */
export const fullDescription = (op: Pick<Operation, 'description' | 'details'>): string =>
  op.details === undefined ? op.description : `${op.description}\n\n${op.details}`;

/** The refusal of a credential lacking the capability an operation requires; `operationName` opens the sentence (an operation, or a page: "The migration dashboard"). */
export function requireCapability(capabilities: ReadonlySet<string>, capability: Capability, operationName: string): void {
  if (!capabilities.has(capability)) {
    throw forbidden('missing_capability', `${operationName} requires ${capability}, which this credential lacks`, { required: capability });
  }
}

/** What an operation asks of its caller; the pages that serve an operation's data ask the same. */
export type Access = Pick<Operation, 'capability' | 'humanAdminOnly'>;

/** The one access check: the capability, then for administration a human admin. `what` names the action in the refusal. */
export function requireAccess(caller: Caller, access: Access, what: string): void {
  if (access.capability !== null) requireCapability(caller.capabilities, access.capability, what);
  if (access.humanAdminOnly) requireHumanAdmin(caller, what);
}

/** Access first (so a caller cannot probe schemas), then input. */
export async function invokeOperation(op: AnyOperation, ctx: RunnerContext, rawInput: unknown): Promise<unknown> {
  requireAccess(ctx.principal, op, op.name);
  const parsed = op.input.safeParse(rawInput);
  if (!parsed.success) throw validationError(parsed.error, `input to ${op.name}`);
  const result = await op.handler(ctx, parsed.data);
  // A key's successes, per capability, are what the cutover observes of a successor key (see FirstUseRecorder).
  if (ctx.principal.credential.kind === 'api_key') ctx.core.keyFirstUse.record(ctx.principal.credential.keyId, op.capability);
  return result;
}
