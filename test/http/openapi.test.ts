import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/app/operation-table.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

interface OpenApiOperation {
  operationId: string;
  'x-capability': string | null;
  parameters: Array<{ name: string; in: string; required: boolean }>;
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, unknown>;
}

const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

describe.each(backends())('OpenAPI document and docs [%s]', (backend) => {
  let t: TestApp;
  let document: { openapi: string; paths: Record<string, Record<string, OpenApiOperation>> };
  beforeAll(async () => {
    t = await startTestApp(backend);
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    document = res.json();
  });
  afterAll(() => t.close());

  const entryOf = (op: (typeof OPERATIONS)[number]) => document.paths[openApiPath(op.path)]?.[op.method.toLowerCase()];

  it('is OpenAPI 3.1.0', () => {
    expect(document.openapi).toBe('3.1.0');
  });

  it.each(OPERATIONS.map((op) => [op.name, op] as const))('documents %s with its path, method, id and capability', (_name, op) => {
    const entry = entryOf(op);
    expect(entry, `${op.method} ${openApiPath(op.path)}`).toBeDefined();
    expect(entry!.operationId).toBe(op.name);
    expect(entry!['x-capability']).toBe(op.capability);
    expect(entry!.responses[String(op.successStatus)]).toBeDefined();
    for (const param of op.path.match(/:(\w+)/g) ?? []) {
      expect(entry!.parameters).toContainEqual(expect.objectContaining({ name: param.slice(1), in: 'path', required: true }));
    }
    if (op.method === 'GET') {
      expect(entry!.requestBody).toBeUndefined();
    } else {
      expect(entry!.requestBody?.content['application/json']?.schema).toBeDefined();
    }
  });

  it('has exactly one entry per operation', () => {
    const count = Object.values(document.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    expect(count).toBe(OPERATIONS.length);
  });

  it('serves the interactive docs as an HTML page', async () => {
    let url = '/docs';
    let res = await t.app.inject({ method: 'GET', url });
    for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 5; hops++) {
      url = new URL(String(res.headers.location), `http://localhost${url}`).pathname;
      res = await t.app.inject({ method: 'GET', url });
    }
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
  });
});

describe.each(backends())('the v2 OpenAPI document [%s]', (backend) => {
  type Operation = Record<string, unknown> & { operationId: string; deprecated?: boolean };
  type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };
  let t: TestApp;
  let v2: Document;
  let v4: Document;
  beforeAll(async () => {
    t = await startTestApp(backend, { seed: false });
    const [v2Res, v4Res] = await Promise.all([t.app.inject({ url: '/openapi-v2.json' }), t.app.inject({ url: '/openapi.json' })]);
    expect(v2Res.statusCode).toBe(200);
    v2 = v2Res.json();
    v4 = v4Res.json();
  });
  afterAll(() => t.close());

  const validate = async (document: unknown) => new Validator().validate(structuredClone(document) as Record<string, unknown>);

  it('validates as OpenAPI 3.1, like the v4 one, with a validator that does refuse a broken one', async () => {
    expect(v2.openapi).toBe('3.1.0');
    expect(await validate(v2)).toEqual({ valid: true });
    expect(await validate(v4)).toEqual({ valid: true });
    const broken = structuredClone(v2);
    broken.paths['/v2/teams']!.get!.deprecated = 'yes' as never;
    expect((await validate(broken)).valid).toBe(false);
  });

  it('has one deprecated operation per v2 route, with its sunset and its v4 successor as the v4 document has it', () => {
    const { routes, sunset } = t.core.mappings;
    const operations = Object.values(v2.paths).flatMap((methods) => Object.values(methods));
    expect(operations).toHaveLength(routes.length);
    for (const route of routes) {
      const op = v2.paths[openApiPath(`/v2${route.path}`)]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toMatchObject({ deprecated: true, 'x-sunset': sunset.sunset.toISOString(), 'x-v2-scope': route.scope });
      const successors = op!['x-v4-successor'] as Array<{ operationId: string; method: string; path: string }>;
      if (route.kind === 'passthrough') {
        expect(successors).toEqual([]);
        expect(op!['x-no-v4-successor']).toEqual(expect.any(String));
        continue;
      }
      expect(successors[0]?.operationId).toBe(route.operation);
      for (const successor of successors) {
        expect(v4.paths[successor.path]?.[successor.method.toLowerCase()]?.operationId, `${route.method} ${route.path} → ${successor.operationId}`).toBe(successor.operationId);
      }
      expect(op!.description).toContain('v2 stops answering on 2027-01-01');
    }
  });

  it('is offered on the docs page beside the v4 document, which links the migration guide', async () => {
    const initializer = await t.app.inject({ url: '/docs/static/swagger-initializer.js' });
    expect(initializer.statusCode).toBe(200);
    expect(initializer.body).toContain('"url":"/openapi.json"');
    expect(initializer.body).toContain('"url":"/openapi-v2.json"');
    expect((v4 as unknown as { info: { description: string } }).info.description).toContain('[migration guide](/docs/migration)');
  });
});
