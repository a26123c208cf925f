import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/operations/index.js';
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
