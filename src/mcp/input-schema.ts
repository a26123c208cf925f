/*
 * Tool input schemas as every model provider accepts them. The Anthropic Messages API refuses a
 * whole request whose tool list holds an input schema with oneOf, anyOf or allOf at the top, and
 * OpenAI function calling wants a plain object at the top too. An operation whose input is a
 * discriminated union (validate_order_constraints, create_purchase_order) is therefore advertised
 * as one flat object keyed by its discriminator; the server still validates the union, so the
 * rules and error codes stay those of REST.
 */

type JsonSchema = Record<string, unknown>;

const COMBINATORS = ['oneOf', 'anyOf', 'allOf'] as const;

const isSchema = (value: unknown): value is JsonSchema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** zod's form of a field a variant refuses (`z.never().optional()`): `{ not: {} }`. */
const refused = (schema: JsonSchema) => isSchema(schema.not) && Object.keys(schema).length === 1 && Object.keys(schema.not).length === 0;

/** The one value a variant's discriminator holds: `const`, or a one-element `enum`. */
function discriminatorValues(schema: JsonSchema | undefined): unknown[] | undefined {
  if (schema === undefined) return undefined;
  if ('const' in schema) return [schema.const];
  return Array.isArray(schema.enum) ? schema.enum : undefined;
}

/** A schema without its description, as JSON: two variants' fields compare equal whatever they tell the model. */
const shape = ({ description: _description, ...rest }: JsonSchema) => JSON.stringify(rest);

/** The field every variant keys on: present in all of them with constant values. */
function discriminatorOf(variants: JsonSchema[]): string {
  const first = variants[0]?.properties;
  const name = isSchema(first)
    ? Object.keys(first).find((key) => variants.every((v) => isSchema(v.properties) && discriminatorValues(v.properties[key] as JsonSchema) !== undefined))
    : undefined;
  if (name === undefined) throw new Error('an input union without a constant field to key on cannot be flattened for tool clients');
  return name;
}

/** Some of the key's values, named outright or, when fewer, as the others: "for every orderType but Purchase for Inventory". */
function which(key: string, values: unknown[], allValues: unknown[]): string {
  const others = allValues.filter((value) => !values.includes(value));
  return others.length < values.length ? `for every ${key} but ${others.join(', ')}` : `only for ${key} ${values.join(', ')}`;
}

/** Which values of the key a field applies to, and where it is required; undefined for a field every variant requires. */
function applicability(key: string, values: unknown[], requiredFor: unknown[], allValues: unknown[]): string | undefined {
  if (requiredFor.length === allValues.length) return undefined;
  const required = requiredFor.length > 0 ? `required ${which(key, requiredFor, allValues)}` : undefined;
  if (values.length === allValues.length) return required && `Optional except: ${required}`;
  if (requiredFor.length === values.length) return `Required ${which(key, values, allValues)}`;
  return [`Accepted ${which(key, values, allValues)}`, required].filter((part) => part !== undefined).join('; ');
}

/**
 * The union's variants merged into one object: the discriminator lists every value; a field some
 * variants take says which; a field is required only where every variant requires it.
 */
function flatten(variants: JsonSchema[]): JsonSchema {
  const key = discriminatorOf(variants);
  const valuesOf = (variant: JsonSchema) => discriminatorValues((variant.properties as Record<string, JsonSchema>)[key])!;
  const allValues = variants.flatMap(valuesOf);
  const fields = new Map<string, { schema: JsonSchema; values: unknown[]; requiredFor: unknown[] }>();
  for (const variant of variants) {
    const properties = variant.properties as Record<string, JsonSchema>;
    const required = new Set(Array.isArray(variant.required) ? (variant.required as string[]) : []);
    for (const [name, schema] of Object.entries(properties)) {
      if (name === key || refused(schema)) continue;
      const field = fields.get(name) ?? { schema, values: [], requiredFor: [] };
      if (shape(field.schema) !== shape(schema)) throw new Error(`input field ${name} differs between variants: it cannot be flattened`);
      field.values.push(...valuesOf(variant));
      if (required.has(name)) field.requiredFor.push(...valuesOf(variant));
      fields.set(name, field);
    }
  }
  const keySchema = (variants[0]!.properties as Record<string, JsonSchema>)[key]!;
  const properties: Record<string, JsonSchema> = {
    [key]: { type: keySchema.type ?? 'string', enum: allValues, description: 'Decides which other fields apply' },
  };
  const required = [key];
  for (const [name, { schema, values, requiredFor }] of fields) {
    const description = [applicability(key, values, requiredFor, allValues), schema.description].filter((part) => part !== undefined).join('. ');
    properties[name] = { ...schema, ...(description === '' ? {} : { description }) };
    if (requiredFor.length === allValues.length) required.push(name);
  }
  const closed = variants.every((v) => v.additionalProperties === false);
  return { type: 'object', properties, required, ...(closed ? { additionalProperties: false } : {}) };
}

/** A tool's input schema with a plain object at the top: a union of objects becomes one flat object. */
export function portableInputSchema(schema: JsonSchema): JsonSchema {
  const combinator = COMBINATORS.find((name) => name in schema);
  if (combinator === undefined) return { type: 'object', properties: {}, ...schema };
  const { [combinator]: variants, type: _type, ...rest } = schema;
  if (combinator === 'allOf' || !Array.isArray(variants) || !variants.every((v) => isSchema(v) && isSchema(v.properties))) {
    throw new Error(`an input schema with ${combinator} at the top is refused by model providers and cannot be flattened`);
  }
  return { ...rest, ...flatten(variants as JsonSchema[]) };
}
