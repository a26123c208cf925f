/*
 * The JSON Schemas a tool list carries, in the form clients and models handle best. zod writes what
 * REST's OpenAPI document shows; the tool list is paid for in every conversation, so its input
 * schemas leave out what the model never needs (the server validates every call against the full
 * schema anyway), and its output schemas keep to the spelling every client's validator reads: one
 * `type` per schema and no schema that constrains nothing.
 */

type JsonSchema = Record<string, unknown>;

const isSchema = (value: unknown): value is JsonSchema => typeof value === 'object' && value !== null && !Array.isArray(value);

const undescribed = ({ description: _description, ...rest }: JsonSchema): JsonSchema => rest;

/** The keywords whose values are a schema, a list of schemas, or schemas by name. */
const SUBSCHEMA = ['items', 'additionalProperties', 'not', 'propertyNames', 'contains'] as const;
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
const SUBSCHEMA_MAPS = ['properties', '$defs', 'patternProperties'] as const;

/** `schema` with `rewrite` applied to every subschema, innermost first, and then to itself. */
function rewriteSchema(schema: JsonSchema, rewrite: (schema: JsonSchema) => JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  for (const key of SUBSCHEMA) if (isSchema(out[key])) out[key] = rewriteSchema(out[key], rewrite);
  for (const key of SUBSCHEMA_LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((s: unknown) => (isSchema(s) ? rewriteSchema(s, rewrite) : s));
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = out[key];
    if (isSchema(map)) out[key] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, isSchema(s) ? rewriteSchema(s, rewrite) : s]));
  }
  return rewrite(out);
}

/** zod's bounds of an unbounded integer (±Number.MAX_SAFE_INTEGER): they say nothing a model or client uses. */
function withoutSafeIntegerBounds(schema: JsonSchema): JsonSchema {
  const { minimum, maximum, ...rest } = schema;
  return {
    ...rest,
    ...(minimum === undefined || minimum === Number.MIN_SAFE_INTEGER ? {} : { minimum }),
    ...(maximum === undefined || maximum === Number.MAX_SAFE_INTEGER ? {} : { maximum }),
  };
}

/**
 * A record of unknown values (`z.record(z.string(), z.unknown())`) as a plain object: zod writes its values as `{}`,
 * which constrains nothing, and its keys as strings, which JSON keys always are; both are the defaults.
 */
function withoutEmptyAdditional(schema: JsonSchema): JsonSchema {
  const { additionalProperties, propertyNames, ...rest } = schema;
  const anyValue = isSchema(additionalProperties) && Object.keys(additionalProperties).length === 0;
  const anyKey = JSON.stringify(propertyNames) === '{"type":"string"}';
  return {
    ...rest,
    ...(anyValue || additionalProperties === undefined ? {} : { additionalProperties }),
    ...(anyKey || propertyNames === undefined ? {} : { propertyNames }),
  };
}

/** `type: [x, "null"]` as `anyOf` of single types: clients that map schemas onto a one-type dialect reject the array. */
function singleTypes(schema: JsonSchema): JsonSchema {
  const { type, description, ...rest } = schema;
  if (!Array.isArray(type)) return schema;
  const branches = type.map((t: unknown) => (t === 'null' ? { type: 'null' } : { type: t, ...rest }));
  return { ...(description === undefined ? {} : { description }), anyOf: branches };
}

/** A description that lists the enum's values again (`Device status: Available, Assigned, …`) keeps only its own words. */
function withoutEnumRestated(schema: JsonSchema): JsonSchema {
  const { description, enum: values } = schema;
  if (typeof description !== 'string' || !Array.isArray(values)) return schema;
  const listed = values.join(', ');
  const at = description.indexOf(listed);
  if (at < 0) return schema;
  const before = description.slice(0, at).replace(/(:|One of)\s*$/, '').trim();
  const after = description.slice(at + listed.length).replace(/^[\s;,.]+/, '').trim();
  const rest = [before, after].filter((part) => part !== '').join('; ');
  return rest === '' ? undescribed(schema) : { ...schema, description: rest };
}

/** An output schema every client validates alike: single types, no `{}`, no empty bounds. */
export function portableOutputSchema(schema: JsonSchema): JsonSchema {
  return rewriteSchema(schema, (s) => singleTypes(withoutEnumRestated(withoutEmptyAdditional(withoutSafeIntegerBounds(s)))));
}

/** A pattern that only refuses control characters (every free-text field has one): no model writes them. */
const CONTROL_CHARACTERS_ONLY = /^\^\[\^\\x00(-\\x1F(\\x7F-\\x9F)?)?\]\*\$$/;

/** The pattern zod derives from a `format` repeats it at length (a date-time's is 400 characters): the format says it. */
function withoutRedundantPattern(schema: JsonSchema): JsonSchema {
  const { pattern, ...rest } = schema;
  if (pattern === undefined || 'format' in schema || (typeof pattern === 'string' && CONTROL_CHARACTERS_ONLY.test(pattern))) return rest;
  return schema;
}

/** Length bounds no model's text comes near (a non-empty id, a name under 64 characters): the server still checks them. */
function withoutLooseLengths(schema: JsonSchema): JsonSchema {
  const { minLength, maxLength, ...rest } = schema;
  return {
    ...rest,
    ...(minLength === undefined || minLength === 1 ? {} : { minLength }),
    ...(typeof maxLength === 'number' && maxLength < 64 ? { maxLength } : {}),
  };
}

/** A list's entries that are plain values say what the list's own description says; a flag's `false` default is every flag's. */
function withoutRepeatedItemText(schema: JsonSchema): JsonSchema {
  const { items, default: fallback, ...rest } = schema;
  const out: JsonSchema = fallback === undefined || (fallback === false && schema.type === 'boolean') ? rest : { ...rest, default: fallback };
  if (isSchema(items)) {
    const plain = schema.description !== undefined && items.type !== 'object';
    out.items = plain ? undescribed(items) : items;
  }
  return out;
}

/** A field the input refuses (zod's `{ not: {} }`): the object is closed, so listing it only costs words. */
const refused = (schema: unknown) => isSchema(schema) && isSchema(schema.not) && Object.keys(schema.not).length === 0;

function withoutRefusedFields(schema: JsonSchema): JsonSchema {
  const { properties } = schema;
  if (!isSchema(properties) || schema.additionalProperties !== false) return schema;
  return { ...schema, properties: Object.fromEntries(Object.entries(properties).filter(([, s]) => !refused(s))) };
}

/** A union's branches repeat the description the field already gives, and a branch that is itself only a union is spliced in. */
function withoutBranchDescriptions(schema: JsonSchema): JsonSchema {
  const { anyOf } = schema;
  if (schema.description === undefined || !Array.isArray(anyOf)) return schema;
  const branches = anyOf.flatMap((branch: unknown) => {
    if (!isSchema(branch)) return [branch];
    const rest = undescribed(branch);
    if (Object.keys(rest).length !== 1 || !Array.isArray(rest.anyOf)) return [rest];
    return rest.anyOf.map((inner: unknown) => (isSchema(inner) ? undescribed(inner) : inner));
  });
  return { ...schema, anyOf: branches };
}

const isEmptyString = (branch: unknown) => isSchema(branch) && branch.const === '' && branch.type === 'string';

/**
 * A clearable text (`anyOf` of a non-empty string, `""` and null) as a string of any length or null:
 * the same values in fewer words, since the only string the first branch refuses is "".
 */
function emptyStringMerged(schema: JsonSchema): JsonSchema {
  const { anyOf } = schema;
  if (!Array.isArray(anyOf) || !anyOf.some(isEmptyString)) return schema;
  // Only a branch that takes "" once its minLength of 1 is gone (lean branches have lost it already); an email's format refuses "".
  const takesEmpty = (b: unknown): b is JsonSchema =>
    isSchema(b) && b.type === 'string' && (b.minLength ?? 1) === 1 && !['const', 'format', 'pattern'].some((keyword) => keyword in b);
  const text = anyOf.find(takesEmpty);
  if (text === undefined) return schema;
  const { minLength: _one, ...anyLength } = text;
  return { ...schema, anyOf: anyOf.filter((b: unknown) => !isEmptyString(b)).map((b: unknown) => (b === text ? anyLength : b)) };
}

/** A query-string flag (`anyOf` of a boolean and its spellings "0", "1", "true", "false") as the boolean a model sends; the server still takes both. */
function flagAsBoolean(schema: JsonSchema): JsonSchema {
  const { anyOf, ...rest } = schema;
  const spellings = Array.isArray(anyOf) && anyOf.length === 2 && anyOf.some((b: unknown) => isSchema(b) && b.type === 'boolean');
  const spelled = spellings && anyOf.some((b: unknown) => isSchema(b) && b.type === 'string' && Array.isArray(b.enum) && [...b.enum].sort().join() === '0,1,false,true');
  return spelled ? { ...rest, type: 'boolean' } : schema;
}

/** Closedness said once, at the top: the server refuses an unknown field at any depth, naming it. */
function openWithin(schema: JsonSchema): JsonSchema {
  const { additionalProperties, ...rest } = schema;
  return additionalProperties === false ? rest : schema;
}

/** An input schema as the model reads it: what it needs to call correctly, and nothing the server checks alone. */
export function leanInputSchema(schema: JsonSchema): JsonSchema {
  const lean = rewriteSchema(schema, (s) =>
    openWithin(
      withoutRepeatedItemText(
        withoutEnumRestated(
          flagAsBoolean(emptyStringMerged(withoutBranchDescriptions(withoutRefusedFields(withoutRedundantPattern(withoutLooseLengths(withoutSafeIntegerBounds(s))))))),
        ),
      ),
    ),
  );
  return schema.additionalProperties === false ? { ...lean, additionalProperties: false } : lean;
}
