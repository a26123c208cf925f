import { z } from 'zod';
import { usageError } from './exit-codes.js';

/*
 * Flags from an operation's input schema, read through zod's public JSON Schema output (the
 * same document OpenAPI and MCP publish), and the request input from flags: the argument
 * parsing of `svc <resource> <action>`, kept apart from any request so it can be tested alone.
 */

/** How a field is given on the command line; `json` fields only through --input. */
export type FlagKind = 'string' | 'number' | 'boolean' | 'list' | 'json';

export interface FieldFlag {
  field: string;
  /** The kebab-case option, without dashes: serialNumber → serial-number. */
  flag: string;
  kind: FlagKind;
  /** A number flag that takes whole numbers only (JSON Schema `integer`). */
  integer: boolean;
  required: boolean;
  description: string;
  /** Allowed values when the field is an enumeration; empty when it takes free text. */
  choices: string[];
}

/** The parts of a JSON Schema node that say how a field is given. */
interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  not?: JsonSchema;
}

export function kebabCase(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The schema a request is checked against, as JSON Schema of what it accepts (before transforms). */
function inputJsonSchema(input: z.ZodType): JsonSchema {
  return z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** The alternatives of a node: the options of (nested) anyOf/oneOf, else the node itself. */
function alternatives(node: JsonSchema): JsonSchema[] {
  const options = node.anyOf ?? node.oneOf;
  return options ? options.flatMap(alternatives) : [node];
}

const typesOf = (node: JsonSchema): string[] => (Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type]);
/** `{ not: {} }`: a field that cannot be given at all (z.never, such as addressTwo at creation). */
const isNever = (node: JsonSchema) => node.not !== undefined && Object.keys(node.not).length === 0;
const isNull = (node: JsonSchema) => typesOf(node).length === 1 && typesOf(node)[0] === 'null';

/** undefined: the field cannot be given at all. */
function kindOf(node: JsonSchema): FlagKind | undefined {
  const options = alternatives(node).filter((o) => !isNever(o));
  if (options.length === 0) return undefined;
  // null (a clearable field's option) says nothing about how the value is typed.
  const kinds = options.filter((o) => !isNull(o)).flatMap(scalarKindsOf);
  if (kinds.length === 0) return 'string';
  if (kinds.includes('json')) return 'json';
  // A query boolean is boolean | "true" | "false"; a clearable text is string | "" | null.
  if (kinds.includes('boolean')) return 'boolean';
  if (kinds.includes('list')) return 'list';
  return kinds.every((k) => k === 'number') ? 'number' : 'string';
}

function scalarKindsOf(node: JsonSchema): FlagKind[] {
  const types = typesOf(node);
  if (types.length === 0) return node.enum || node.const !== undefined ? ['string'] : ['json'];
  return types.map((type): FlagKind => {
    if (type === 'string' || type === 'null') return 'string';
    if (type === 'number' || type === 'integer') return 'number';
    if (type === 'boolean') return 'boolean';
    if (type === 'array' && node.items) {
      const element = kindOf(node.items);
      return element === 'string' || element === 'number' ? 'list' : 'json';
    }
    return 'json';
  });
}

const isInteger = (node: JsonSchema) => alternatives(node).some((o) => typesOf(o).includes('integer'));

/** The values of an enumeration; undefined when any alternative (null aside) takes free input. */
function choicesOf(node: JsonSchema): string[] | undefined {
  const values: string[] = [];
  for (const option of alternatives(node)) {
    if (isNull(option) || isNever(option)) continue;
    if (option.enum) values.push(...option.enum.map(String));
    else if (option.const !== undefined) values.push(String(option.const));
    else return undefined;
  }
  return values.length > 0 ? values : undefined;
}

const descriptionOf = (node: JsonSchema) => node.description ?? alternatives(node).find((o) => o.description)?.description;

/** The object variants of an input schema: one for an object, several for a (discriminated) union. */
function variantsOf(schema: JsonSchema): JsonSchema[] {
  const objects = alternatives(schema).filter((o) => o.properties);
  if (objects.length === 0) throw new Error('an operation input schema must be an object or a union of objects');
  return objects;
}

interface Collected extends Omit<FieldFlag, 'choices'> {
  /** undefined once a variant takes free input for the field. */
  choices: string[] | undefined;
  /** How many variants require the field. */
  requiredIn: number;
}

/**
 * One flag per input field, in schema order. A field of several union variants (orderType, items)
 * is required only when every variant requires it, and lists choices only when every variant
 * enumerates them; path parameters are left out.
 */
export function describeInput(input: z.ZodType, pathParams: readonly string[] = []): FieldFlag[] {
  const variants = variantsOf(inputJsonSchema(input));
  const flags = new Map<string, Collected>();
  for (const variant of variants) {
    for (const [field, node] of Object.entries(variant.properties ?? {})) {
      if (pathParams.includes(field)) continue;
      const kind = kindOf(node);
      // A never field (addressTwo at creation, employeeId of an inventory purchase) is absent from that variant.
      if (kind === undefined) continue;
      const required = variant.required?.includes(field) === true ? 1 : 0;
      const known = flags.get(field);
      if (known) {
        const choices = choicesOf(node);
        known.choices = known.choices && choices ? [...new Set([...known.choices, ...choices])] : undefined;
        known.requiredIn += required;
      } else {
        const description = descriptionOf(node) ?? '';
        flags.set(field, { field, flag: kebabCase(field), kind, integer: isInteger(node), required: false, description, choices: choicesOf(node), requiredIn: required });
      }
    }
  }
  return [...flags.values()].map(({ requiredIn, choices, ...flag }) => ({
    ...flag,
    required: requiredIn === variants.length,
    // A boolean flag is given bare (--in-stock, --no-in-stock): its text spellings are no choice.
    choices: flag.kind === 'boolean' ? [] : (choices ?? []),
  }));
}

/**
 * Converts one flag's text to the JSON value the API takes; the schema then judges it. A number
 * flag refuses text that is no number here, naming the flag, before the schema's terser message.
 */
export function flagValue(flag: FieldFlag, raw: string | boolean | string[]): unknown {
  if (flag.kind === 'boolean') return raw;
  if (flag.kind === 'list') {
    const items = (Array.isArray(raw) ? raw : [String(raw)]).flatMap((item) => item.split(',')).map((s) => s.trim()).filter(Boolean);
    return items;
  }
  const text = String(raw);
  if (flag.kind === 'number') {
    const number = Number(text);
    const rule = flag.integer ? 'a whole number' : 'a number';
    if (text.trim() === '' || !Number.isFinite(number) || (flag.integer && !Number.isInteger(number))) {
      throw usageError(`--${flag.flag}: expected ${rule}, got "${text}"`);
    }
    return number;
  }
  return text;
}

/**
 * The request input: the --input document, then the flags (a flag wins over the same field of
 * the document), then the path parameters. JSON-only fields given as flags are refused.
 */
export function buildInput(
  flags: readonly FieldFlag[],
  values: Record<string, unknown>,
  document: Record<string, unknown> = {},
  params: Record<string, string> = {},
): Record<string, unknown> {
  const input: Record<string, unknown> = { ...document };
  for (const flag of flags) {
    const raw = values[flag.field];
    if (raw === undefined) continue;
    if (flag.kind === 'json') {
      throw usageError(`--${flag.flag} takes an object or a list of objects: give it in the JSON body with --input <file> or --input -`);
    }
    input[flag.field] = flagValue(flag, raw as string | boolean | string[]);
  }
  return { ...input, ...params };
}

/** Names each schema problem by the flag the user typed when there is one. */
export function describeIssues(error: z.ZodError, flags: readonly FieldFlag[]): string[] {
  return error.issues.map((issue) => {
    const [head, ...rest] = issue.path.map(String);
    const flag = flags.find((f) => f.field === head);
    const where = flag && flag.kind !== 'json' ? `--${flag.flag}` : issue.path.join('.') || '(input)';
    return `${where}${rest.length && flag?.kind !== 'json' ? `.${rest.join('.')}` : ''}: ${issue.message}`;
  });
}
