import { execFileSync } from 'node:child_process';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/access/principal.js';
import { portableInputSchema } from '../../src/mcp/input-schema.js';
import { listTools, toolOperation } from '../../src/mcp/tools.js';

/*
 * The tool definitions a client hands a model, linted against the model providers' tool formats.
 * Rules, from their public docs:
 * - Anthropic Messages API, tool use (docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use):
 *   `name` matches ^[a-zA-Z0-9_-]{1,64}$; `input_schema` is a JSON Schema object. The API refuses the
 *   whole request when one input schema has oneOf, allOf or anyOf at the top level ("input_schema does
 *   not support oneOf, allOf, or anyOf at the top level").
 * - OpenAI function calling (platform.openai.com/docs/guides/function-calling, and the supported schemas
 *   of structured outputs): a function name of a-z, A-Z, 0-9, underscores and dashes, at most 64; the
 *   parameters' root must be an object, not anyOf.
 * - Both validate `pattern` with their own engines, and clients in Python and Go compile it too:
 *   a pattern must compile in ECMAScript, Python's re and Go's regexp (RE2: no lookaround, no
 *   backreferences, no \p classes in Python, no \u escapes in Go).
 */

const principal = { userId: 'u', capabilities: new Set<string>(), credential: { kind: 'api_key', keyId: 'k' } } as unknown as Principal;
const tools = listTools(principal, 'http://127.0.0.1');

type Schema = Record<string, unknown>;

/** Every `pattern` anywhere in a schema. */
function patterns(schema: unknown): string[] {
  if (Array.isArray(schema)) return schema.flatMap(patterns);
  if (typeof schema !== 'object' || schema === null) return [];
  return Object.entries(schema).flatMap(([key, value]) => (key === 'pattern' && typeof value === 'string' ? [value] : patterns(value)));
}

/** Syntax outside the common ground of ECMAScript, Python re and Go RE2. */
const NOT_PORTABLE: [RegExp, string][] = [
  [/\(\?<?[=!]/, 'lookaround (RE2 has none)'],
  [/\\[1-9]|\\k</, 'backreference (RE2 has none)'],
  [/\\[pP]\{/, 'Unicode property class (Python re has none)'],
  [/\\u[0-9a-fA-F{]/, '\\u escape (Go regexp has none)'],
  [/\(\?<[A-Za-z]/, 'named group (Python spells it (?P<…>)'],
  [/[*+?}]\+/, 'possessive quantifier'],
];

describe('tool definitions every model provider accepts', () => {
  it('lists the 27 tools', () => {
    expect(tools).toHaveLength(27);
  });

  it.each(tools.map((t) => [t.name, t] as const))('%s: name and a plain object input schema with properties', (name, tool) => {
    expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const schema = tool.inputSchema as Schema;
    expect(schema.type).toBe('object');
    expect(typeof schema.properties).toBe('object');
    for (const keyword of ['oneOf', 'anyOf', 'allOf', 'not', 'enum', 'const', '$ref']) expect(schema, keyword).not.toHaveProperty(keyword);
  });

  it('writes every pattern in syntax that ECMAScript, Python re and Go regexp all compile', () => {
    const all = [...new Set(tools.flatMap((t) => patterns(t.inputSchema)))];
    expect(all.length).toBeGreaterThan(3);
    for (const pattern of all) {
      expect(() => new RegExp(pattern, 'u'), pattern).not.toThrow();
      for (const [syntax, why] of NOT_PORTABLE) expect(syntax.test(pattern), `${pattern}: ${why}`).toBe(false);
    }
    // Python itself, as a Python-based client compiles them.
    const failures = execFileSync(
      'python3',
      ['-c', 'import json, re, sys\nfor p in json.load(sys.stdin):\n    try: re.compile(p)\n    except re.error as e: print(p, e)'],
      { input: JSON.stringify(all), encoding: 'utf8' },
    );
    expect(failures).toBe('');
  });
});

describe('a union input advertised as one flat object', () => {
  const validator = new AjvJsonSchemaValidator();
  const schemaOf = (name: string) => tools.find((t) => t.name === name)!.inputSchema as Schema;
  const valid = {
    create_purchase_order: [
      { orderType: 'Purchase for Employee', employeeId: 'em_1', items: [{ itemId: 'ci_1', quantity: 2, country: 'DE' }] },
      { orderType: 'Purchase for Inventory', companyId: 'co_1', items: [{ itemId: 'ci_1', quantity: 1, country: 'US' }] },
    ],
    validate_order_constraints: [
      { orderType: 'Deployment', employeeId: 'em_1', productIds: ['pr_1'] },
      { orderType: 'Collection', employeeId: 'em_1', productIds: ['pr_1'], dispositions: [{ productId: 'pr_1', action: 'recycle' }] },
      { orderType: 'Purchase for Inventory', items: [{ itemId: 'ci_1', quantity: 1, country: 'US' }] },
    ],
  };

  it('validate_order_constraints: required only where every order type requires it', () => {
    const properties = schemaOf('validate_order_constraints').properties as Record<string, Schema>;
    expect(schemaOf('validate_order_constraints').required).toEqual(['orderType']);
    expect(properties.orderType!.enum).toEqual(['Deployment', 'Offboarding', 'Collection', 'Maintenance', 'Swap from Inventory', 'Purchase for Employee', 'Purchase for Inventory']);
    expect(properties.items!.description).toMatch(/^Required only for orderType Purchase for Employee, Purchase for Inventory\. /);
    // Five of seven types need it: named as the exception, the shorter sentence.
    expect(properties.employeeId!.description).toMatch(/^Required for every orderType but Purchase for Inventory\. /);
  });

  it('create_purchase_order: items required by both variants, the employee by one', () => {
    const properties = schemaOf('create_purchase_order').properties as Record<string, Schema>;
    expect(schemaOf('create_purchase_order').required).toEqual(['orderType', 'items']);
    expect(properties.employeeId!.description).toMatch(/^Required only for orderType Purchase for Employee\. /);
  });

  it.each(Object.entries(valid))('%s: says which fields apply to which order type; accepts what the server accepts', (name, inputs) => {
    const schema = schemaOf(name);
    const properties = schema.properties as Record<string, Schema>;
    expect(schema.additionalProperties).toBe(false);
    expect(properties.orderType!.enum).toContain('Purchase for Inventory');
    expect(properties.companyId!.description).toMatch(/^Accepted only for orderType Purchase for Inventory\. /);
    // What the server accepts, a client validating against the advertised schema accepts too.
    const check = validator.getValidator(schema);
    for (const input of inputs) {
      expect(toolOperation(name)!.input.safeParse(input).success, JSON.stringify(input)).toBe(true);
      expect(check(input).valid, JSON.stringify(input)).toBe(true);
    }
  });

  it('refuses to flatten variants that disagree on a field, and combinators it cannot flatten', () => {
    const variant = (type: string, id: Schema) => ({ type: 'object', properties: { kind: { const: type }, id }, required: ['kind'] });
    expect(() => portableInputSchema({ oneOf: [variant('a', { type: 'string' }), variant('b', { type: 'number' })] })).toThrow(/id differs/);
    expect(() => portableInputSchema({ allOf: [variant('a', { type: 'string' })] })).toThrow(/allOf/);
    expect(() => portableInputSchema({ anyOf: [{ type: 'object', properties: { id: { type: 'string' } } }] })).toThrow(/constant field/);
  });
});
