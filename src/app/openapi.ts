import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { baseUrlOf } from '../kit/config.js';
import type { Core } from './core.js';
import { buildV2OpenApiDocument } from '../gateway/v2-openapi.js';
import { OPERATIONS } from './operation-table.js';
import { fullDescription, type AnyOperation } from '../operations/operation.js';
import { openApiPath, pathParams } from '../kit/path-template.js';
import { IDEMPOTENCY_TTL_HOURS } from '../http/idempotency.js';

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] };

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}


const ERROR_ENVELOPE: JsonSchema = {
  type: 'object',
  required: ['ok', 'error', 'meta'],
  properties: {
    ok: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'Stable machine-readable code' },
        message: { type: 'string' },
        details: { description: 'For validation errors: [{field, rule, message}]' },
      },
    },
    meta: { type: 'object', properties: { requestId: { type: 'string' } } },
  },
};

/** A body discriminated on a field (`type`) is a union of objects: each branch, path parameters removed. */
function withoutParams(schema: JsonSchema, names: string[]): JsonSchema {
  const branches = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(branches)) return { oneOf: (branches as JsonSchema[]).map((b) => withoutParams(b, names)) };
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([name]) => !names.includes(name)));
  return { ...schema, properties, required: (schema.required ?? []).filter((n) => !names.includes(n)) };
}

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: `Makes a retry safe: a retry with the same key and body gets the first answer (header \`Idempotent-Replayed: true\`) instead of a second write; the same key with another body is refused (422 \`idempotency_key_reused\`). Per user, kept ${IDEMPOTENCY_TTL_HOURS} hours; 1 to 255 visible ASCII characters.`,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' } as JsonSchema,
};

function operationObject(op: AnyOperation) {
  const input = jsonSchema(op.input, 'input');
  const inPath = pathParams(op.path);
  const branches = (input.oneOf ?? input.anyOf ?? [input]) as JsonSchema[];
  const properties = Object.assign({}, ...branches.map((b) => b.properties ?? {})) as Record<string, JsonSchema>;
  const required = new Set(input.required ?? []);
  const parameters = Object.entries(properties)
    .filter(([name]) => op.method === 'GET' || inPath.includes(name))
    .map(([name, schema]) => ({
      name,
      in: inPath.includes(name) ? 'path' : 'query',
      required: inPath.includes(name) || required.has(name),
      description: typeof schema.description === 'string' ? schema.description : undefined,
      schema,
    }));
  if (op.method !== 'GET') parameters.push(IDEMPOTENCY_PARAMETER);
  const errors = (codes: number[]) =>
    Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/Error${c}` }]));
  return {
    operationId: op.name,
    summary: op.title,
    description: fullDescription(op) + (op.capability ? `\n\nRequires capability \`${op.capability}\`.` : '\n\nNeeds no capability.'),
    tags: [op.path.split('/')[2] ?? 'v4'],
    'x-capability': op.capability,
    'x-mcp-tool': op.origin === 'spec' ? op.name : undefined,
    parameters,
    requestBody:
      op.method === 'GET'
        ? undefined
        : {
            required: true,
            content: {
              'application/json': { schema: withoutParams(input, inPath) },
            },
          },
    responses: {
      [String(op.successStatus)]: {
        description: 'Success',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['ok', 'data', 'meta'],
              properties: { ok: { const: true }, data: jsonSchema(op.output, 'output'), meta: { type: 'object' } },
            },
          },
        },
      },
      ...errors(op.method === 'GET' ? [400, 401, 403, 404, 409] : [400, 401, 403, 404, 409, 422]),
    },
  };
}

/** OpenAPI 3.1 document derived from the operation table. */
export function buildOpenApiDocument(baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const path = openApiPath(op.path);
    paths[path] = { ...paths[path], [op.method.toLowerCase()]: operationObject(op) };
  }
  const errorResponse = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Device Lifecycle Service API',
      version: '4',
      description:
        'REST v4 of the Device Lifecycle Service. Every operation is also an MCP tool at /mcp (same name) and a `svc` command.\n\nMoving from v2? The [migration guide](/docs/migration) gives the v4 calls for every v2 endpoint; the deprecated v2 API is the other definition at the top of this page.',
    },
    servers: [{ url: baseUrl }],
    security: [{ apiKey: [] }, { idToken: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'v4 key, prefix svc_sk_, bound to a user' },
        idToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Identity-provider ID token' },
      },
      schemas: { ErrorEnvelope: ERROR_ENVELOPE },
      responses: {
        Error400: errorResponse('Invalid input: details name each field and rule'),
        Error401: errorResponse('Missing, invalid or legacy credential'),
        Error403: errorResponse('Missing capability or outside the caller’s scope'),
        Error404: errorResponse('Not found (or not visible to the caller)'),
        Error409: errorResponse('Conflict, such as a duplicate team name'),
        Error422: errorResponse('An Idempotency-Key used before for another request, or input that breaks a business rule'),
      },
    },
  };
}

export async function registerDocs(app: FastifyInstance, core: Core): Promise<void> {
  const document = buildOpenApiDocument(baseUrlOf(core.config));
  const v2Document = buildV2OpenApiDocument(core.mappings, baseUrlOf(core.config));
  app.get('/openapi.json', async () => document);
  app.get('/openapi-v2.json', async () => v2Document);
  const [{ default: swagger }, { default: swaggerUi }] = await Promise.all([
    import('@fastify/swagger'),
    import('@fastify/swagger-ui'),
  ]);
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Both versions, v4 first; the top bar switches between them.
    uiConfig: {
      urls: [
        { url: '/openapi.json', name: 'v4' },
        { url: '/openapi-v2.json', name: `v2 (deprecated, sunset ${core.mappings.sunset.sunset.toISOString().slice(0, 10)})` },
      ],
    },
  });
}
