import { z } from 'zod';
import type { Tool } from '@modelcontextprotocol/server';
import type { Principal } from '../access/principal.js';
import { errorObject, type AppError } from '../kit/errors.js';
import { DOMAIN_OPERATIONS } from '../operations/domain-table.js';
import type { AnyOperation } from '../operations/operation.js';
import { icon, toolIconName } from './icons.js';
import { portableInputSchema } from './input-schema.js';
import { leanInputSchema, portableOutputSchema } from './tool-schemas.js';

/** The spec's operations are the tools; extensions stay REST/CLI only. */
export const TOOL_OPERATIONS: readonly AnyOperation[] = DOMAIN_OPERATIONS.filter((op) => op.origin === 'spec');

const TOOLS_BY_NAME: ReadonlyMap<string, AnyOperation> = new Map(TOOL_OPERATIONS.map((op) => [op.name, op]));

export function toolOperation(name: string): AnyOperation | undefined {
  return TOOLS_BY_NAME.get(name);
}

type ObjectSchema = Tool['inputSchema'];

/** MCP wants an object schema at the top; a union of object shapes (oneOf) is one too, so it gets `type: object`. */
function objectSchema(schema: z.ZodType, io: 'input' | 'output'): ObjectSchema {
  // The dialect is left implicit: 2020-12 is MCP's default, and some clients' validators reject an explicit one.
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return { type: 'object', ...rest } as ObjectSchema;
}

/** What a client hands the model: a plain object at the top, as every provider's tool format requires, and no more than the model needs. */
const inputSchema = (schema: z.ZodType) => leanInputSchema(portableInputSchema(objectSchema(schema, 'input'))) as ObjectSchema;

/** The handler returns the output schema's input form (what REST serializes), so that is the form declared. */
const outputSchema = (schema: z.ZodType) => portableOutputSchema(objectSchema(schema, 'input')) as ObjectSchema;

/** Every hint explicit: a client's defaults (destructive, open world) would misdescribe most tools. */
function annotations(op: AnyOperation): NonNullable<Tool['annotations']> {
  return {
    title: op.title,
    readOnlyHint: op.readOnly,
    destructiveHint: op.destructive,
    idempotentHint: op.idempotent,
    openWorldHint: op.openWorld,
  };
}

let builtTools: ReadonlyMap<string, Tool> | undefined;

/**
 * Every tool as any credential sees it before its availability marks (the generated MCP reference lists
 * these). Built at the first tools/list, not at start: converting the schemas is a tenth of a second.
 */
export function baseTools(): ReadonlyMap<string, Tool> {
  builtTools ??= new Map(
    TOOL_OPERATIONS.map((op) => [
      op.name,
      {
        name: op.name,
        title: op.title,
        description: op.description,
        inputSchema: inputSchema(op.input),
        outputSchema: outputSchema(op.output),
        annotations: annotations(op),
      },
    ]),
  );
  return builtTools;
}

export function canCall(principal: Principal, op: AnyOperation): boolean {
  return op.capability === null || principal.capabilities.has(op.capability);
}

/**
 * tools/list shows every tool and marks the ones this credential cannot call: `_meta` says so
 * for programs, a sentence in the description says so for the model. Listing all keeps the
 * list stable while permissions change and tells the user which permission to grant.
 */
export function listTools(principal: Principal, baseUrl: string): Tool[] {
  return TOOL_OPERATIONS.map((op) => {
    const tool = baseTools().get(op.name)!;
    const available = canCall(principal, op);
    return {
      ...tool,
      icons: icon(baseUrl, toolIconName(op)),
      ...(available ? {} : { description: `${tool.description}\n\nUnavailable to this credential: it lacks ${op.capability}.` }),
      _meta: { 'svc/capability': op.capability, 'svc/available': available },
    };
  });
}

/** Marks a success whose structuredContent serializes to exactly its text block's JSON. */
const STRUCTURED_AS_TEXT = Symbol('structuredContent is the text block');

/** A tool result in the form both SDK generations accept (v2 widens structuredContent to any JSON value). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Symbol-keyed: neither JSON nor the SDK's schemas see it. */
  [STRUCTURED_AS_TEXT]?: true;
}

/** A success: the data as structuredContent and as the JSON text block older clients read. */
export function successResult(data: unknown): ToolResult {
  // Operation outputs are JSON values already (REST serializes the same object).
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data as Record<string, unknown>, [STRUCTURED_AS_TEXT]: true };
}

/** Fields a kind of answer adds to every result, with their JSON members written once (not per call). */
export interface ResultFields {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly members: string;
}

export function resultFields(fields: Record<string, unknown>): ResultFields {
  return { fields, members: JSON.stringify(fields).slice(1, -1) };
}

const NO_FIELDS = resultFields({});

/**
 * The JSON-RPC answer carrying a tool result, as JSON text, with `extra` result fields. A success's
 * structuredContent is written as the JSON its text block already holds, not serialized a second time.
 */
export function toolAnswerJson(id: string | number, result: ToolResult, extra: ResultFields = NO_FIELDS): string {
  // Only a success as successResult made it: a copy with other fields (`{ ...result, _meta }`) keeps the mark.
  const plain = result[STRUCTURED_AS_TEXT] === true && result.content.length === 1 && Object.keys(result).length === 2;
  const structured = plain ? result.content[0]?.text : undefined;
  if (structured === undefined) return JSON.stringify({ jsonrpc: '2.0', id, result: { ...result, ...extra.fields } });
  const content = `[{"type":"text","text":${JSON.stringify(structured)}}]`;
  const more = extra.members === '' ? '' : `,${extra.members}`;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":${content},"structuredContent":${structured}${more}}}`;
}

/** A failure with the code and message REST would answer, so agents and integrations see one vocabulary. */
export function errorResult(error: AppError): ToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: errorObject(error) }) }] };
}
