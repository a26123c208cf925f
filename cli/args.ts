import type { z } from 'zod';
import { usageError } from './exit-codes.js';

/*
 * Flags from an operation's zod input schema, and the request input from flags: the argument
 * parsing of `svc <resource> <action>`, kept apart from any request so it can be tested alone.
 */

/** How a field is given on the command line; `json` fields only through --input. */
export type FlagKind = 'string' | 'number' | 'boolean' | 'list' | 'json';

export interface FieldFlag {
  field: string;
  /** The kebab-case option, without dashes: serialNumber → serial-number. */
  flag: string;
  kind: FlagKind;
  required: boolean;
  description: string;
  /** Allowed values of an enum field, shown in the help. */
  choices: string[];
}

/** The parts of zod's internal definition that name a field's shape. */
interface Def {
  type: string;
  innerType?: Schema;
  in?: Schema;
  options?: Schema[];
  shape?: Record<string, Schema>;
  element?: Schema;
  entries?: Record<string, string | number>;
  values?: unknown[];
}
interface Schema {
  _zod: { def: Def };
  description?: string;
}

const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch', 'nonoptional']);
const OPTIONAL = new Set(['optional', 'default', 'prefault']);

export function kebabCase(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

interface Unwrapped {
  core: Schema;
  optional: boolean;
  description: string | undefined;
}

/** Peels optional/default/nullable wrappers and transforms down to the schema that takes the input. */
function unwrap(schema: Schema): Unwrapped {
  let current = schema;
  let optional = false;
  let description = schema.description;
  for (;;) {
    const def = current._zod.def;
    if (WRAPPERS.has(def.type) && def.innerType) {
      optional ||= OPTIONAL.has(def.type);
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      current = def.in;
    } else {
      return { core: current, optional, description };
    }
    description ??= current.description;
  }
}

function choicesOf(schema: Schema): string[] {
  const def = schema._zod.def;
  if (def.type === 'enum' && def.entries) return Object.values(def.entries).map(String);
  if (def.type === 'literal' && def.values) return def.values.map(String);
  if (def.type === 'union' && def.options) return def.options.flatMap((o) => choicesOf(unwrap(o).core));
  return [];
}

const SCALARS: Record<string, FlagKind> = {
  string: 'string',
  enum: 'string',
  literal: 'string',
  number: 'number',
  int: 'number',
  boolean: 'boolean',
};

/** undefined: the field cannot be given at all (z.never, such as addressTwo at creation). */
function kindOf(schema: Schema): FlagKind | undefined {
  const def = schema._zod.def;
  if (def.type === 'never') return undefined;
  const scalar = SCALARS[def.type];
  if (scalar) return scalar;
  if (def.type === 'array' && def.element) {
    const element = kindOf(unwrap(def.element).core);
    return element === 'string' || element === 'number' ? 'list' : 'json';
  }
  if (def.type === 'union' && def.options) {
    const kinds = def.options.map((o) => kindOf(unwrap(o).core)).filter((k) => k !== undefined);
    if (kinds.includes('json')) return 'json';
    // A query boolean is boolean | "true" | "false"; a clearable text is string | "" | null.
    if (kinds.includes('boolean')) return 'boolean';
    if (kinds.includes('list')) return 'list';
    return kinds.every((k) => k === 'number') && kinds.length > 0 ? 'number' : 'string';
  }
  // null alone (a clearable field's `z.null()` option) reads as text; objects, records, unknown: JSON.
  if (def.type === 'null') return 'string';
  return 'json';
}

/** The object variants of an input schema: one for an object, several for a (discriminated) union. */
function variantsOf(schema: Schema): Record<string, Schema>[] {
  const { core } = unwrap(schema);
  const def = core._zod.def;
  if (def.type === 'object' && def.shape) return [def.shape];
  if (def.type === 'union' && def.options) return def.options.flatMap(variantsOf);
  throw new Error(`input schema of type ${def.type} has no fields`);
}

/**
 * One flag per input field, in schema order. A field of several union variants (orderType, items)
 * is required only when every variant requires it; path parameters are left out.
 */
export function describeInput(input: z.ZodType, pathParams: readonly string[] = []): FieldFlag[] {
  const variants = variantsOf(input as unknown as Schema);
  const flags = new Map<string, FieldFlag>();
  const requiredIn = new Map<string, number>();
  for (const shape of variants) {
    for (const [field, schema] of Object.entries(shape)) {
      if (pathParams.includes(field)) continue;
      const { core, optional, description } = unwrap(schema);
      const kind = kindOf(core);
      // A never field (addressTwo at creation, employeeId of an inventory purchase) is absent from that variant.
      if (kind === undefined) continue;
      if (!optional) requiredIn.set(field, (requiredIn.get(field) ?? 0) + 1);
      const known = flags.get(field);
      if (known) known.choices = [...new Set([...known.choices, ...choicesOf(core)])];
      else flags.set(field, { field, flag: kebabCase(field), kind, required: false, description: description ?? '', choices: choicesOf(core) });
    }
  }
  for (const flag of flags.values()) flag.required = requiredIn.get(flag.field) === variants.length;
  return [...flags.values()];
}

/** The `:name` parameters of a path, in order. */
export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
}

/** Converts one flag's text to the JSON value the API takes; the schema then judges it. */
export function flagValue(flag: FieldFlag, raw: string | boolean | string[]): unknown {
  if (flag.kind === 'boolean') return raw;
  if (flag.kind === 'list') {
    const items = (Array.isArray(raw) ? raw : [String(raw)]).flatMap((item) => item.split(',')).map((s) => s.trim()).filter(Boolean);
    return items;
  }
  const text = String(raw);
  if (flag.kind === 'number') {
    const number = Number(text);
    return text.trim() !== '' && Number.isFinite(number) ? number : text;
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
