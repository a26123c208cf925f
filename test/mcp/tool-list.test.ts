import { describe, expect, it } from 'vitest';
import { CAPABILITIES } from '../../src/access/capabilities.js';
import { listTools } from '../../src/mcp/tools.js';
import { leanInputSchema, portableOutputSchema } from '../../src/mcp/tool-schemas.js';
import { everyCapability, MEASURED_BASE_URL, toolListSize } from './support/tool-list-size.js';

/*
 * What every conversation pays for the tool list, and how portable its schemas are. A size is
 * deterministic, so it is a budget here; bench/tool-list.ts records the figures beside the
 * list before it was made lean.
 */

const tools = listTools(everyCapability(CAPABILITIES), MEASURED_BASE_URL);

/** The model-facing part (names, descriptions, input schemas) of all the tools, in bytes. */
const MODEL_BUDGET = 25_000;
/** The whole tools/list result; it was 100 KB. */
const LIST_BUDGET = 88_000;

type Schema = Record<string, unknown>;
const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every schema in `schema`, with its path: properties, items, additionalProperties and union branches. */
function subschemas(schema: Schema, path: string): Array<[string, Schema]> {
  const found: Array<[string, Schema]> = [[path, schema]];
  if (isSchema(schema.properties)) {
    for (const [name, s] of Object.entries(schema.properties)) if (isSchema(s)) found.push(...subschemas(s, `${path}.properties.${name}`));
  }
  for (const key of ['items', 'additionalProperties', 'not'] as const) {
    const s = schema[key];
    if (isSchema(s)) found.push(...subschemas(s, `${path}.${key}`));
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((s: unknown, i) => isSchema(s) && found.push(...subschemas(s, `${path}.${key}.${i}`)));
  }
  return found;
}

/** What keeps a schema from being portable: a `type` array, or a schema that constrains nothing. */
function portabilityProblems(schema: Schema, path: string): string[] {
  return subschemas(schema, path).flatMap(([at, s]) => {
    if (Array.isArray(s.type)) return [`${at}: type is an array (${JSON.stringify(s.type)})`];
    const typed = typeof s.type === 'string' || Array.isArray(s.anyOf) || Array.isArray(s.oneOf);
    return typed ? [] : [`${at}: no type (${JSON.stringify(s)})`];
  });
}

describe('the tool list a client hands a model', () => {
  it(`costs at most ${MODEL_BUDGET} bytes for names, descriptions and input schemas, the whole list at most ${LIST_BUDGET}`, () => {
    const size = toolListSize(tools);
    expect(size.tools).toBe(27);
    expect(size.modelBytes).toBeLessThanOrEqual(MODEL_BUDGET);
    expect(size.listBytes).toBeLessThanOrEqual(LIST_BUDGET);
  });

  it('describes failures by the code a call answers, not by an HTTP status', () => {
    for (const tool of tools) expect(tool.description, tool.name).not.toMatch(/\b(400|401|403|404|409|422|500)\b|\b(GET|POST|PATCH) \//);
  });

  it.each(tools.map((t) => [t.name, t] as const))('%s: every schema has one type, none constrains nothing, the output is an object', (name, tool) => {
    expect(tool.outputSchema?.type).toBe('object');
    expect(portabilityProblems(tool.outputSchema as Schema, 'outputSchema')).toEqual([]);
    expect(portabilityProblems(tool.inputSchema as Schema, 'inputSchema')).toEqual([]);
  });
});

describe('the schema renderings', () => {
  it('spells a nullable type as anyOf, drops a keyword-free additionalProperties and says-nothing integer bounds', () => {
    expect(
      portableOutputSchema({
        type: 'object',
        properties: {
          name: { type: ['string', 'null'], description: 'Name', maxLength: 5 },
          count: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
          data: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} },
        },
      }),
    ).toEqual({
      type: 'object',
      properties: {
        name: { description: 'Name', anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }] },
        count: { type: 'integer' },
        data: { type: 'object' },
      },
    });
  });

  it('keeps in an input what a model needs to call correctly and leaves out what only the server checks', () => {
    const lean = leanInputSchema({
      type: 'object',
      properties: {
        id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[^\\x00]*$', description: 'Order id' },
        zipCode: { type: 'string', minLength: 1, maxLength: 20, description: 'Postal code' },
        at: { type: 'string', format: 'date-time', pattern: '^\\d{4}-.*$', description: 'When' },
        flag: { description: 'A flag', anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['true', 'false', '1', '0'] }] },
        note: {
          description: 'A note; null or "" clears it',
          anyOf: [{ type: 'string', minLength: 1, maxLength: 200, description: 'A note' }, { type: 'string', const: '' }, { type: 'null' }],
        },
        // An email's format refuses "", so its "" stays a branch of its own.
        email: { description: 'Email', anyOf: [{ type: 'string', format: 'email' }, { type: 'string', const: '' }, { type: 'null' }] },
        kind: { type: 'string', enum: ['a', 'b'], description: 'Kind: a, b' },
        refused: { not: {}, description: 'Not accepted here' },
        nested: { type: 'object', properties: { sendEmail: { type: 'boolean', default: false } }, additionalProperties: false },
      },
      additionalProperties: false,
    });
    expect(lean).toEqual({
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Order id' },
        zipCode: { type: 'string', maxLength: 20, description: 'Postal code' },
        at: { type: 'string', format: 'date-time', description: 'When' },
        flag: { description: 'A flag', type: 'boolean' },
        note: { description: 'A note; null or "" clears it', anyOf: [{ type: 'string' }, { type: 'null' }] },
        email: { description: 'Email', anyOf: [{ type: 'string', format: 'email' }, { type: 'string', const: '' }, { type: 'null' }] },
        kind: { type: 'string', enum: ['a', 'b'], description: 'Kind' },
        nested: { type: 'object', properties: { sendEmail: { type: 'boolean' } } },
      },
      additionalProperties: false,
    });
  });
});
