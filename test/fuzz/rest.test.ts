import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/app/operation-table.js';
import type { AnyOperation } from '../../src/operations/operation.js';
import { sql } from '../../src/store/sql.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';
import { validExamples } from './support/examples.js';
import { anyJson, expectV4Answer, fillPath, fuzz, FUZZ_SEED, hostileString, mutationOf, queryOf, type Doc } from './support/fuzz.js';

/*
 * Every REST operation of the table, fed random JSON of many shapes and mutations of a valid
 * input (wrong types, missing and unknown fields, hostile strings in every field) with the demo
 * admin's key, which holds every capability, so each input reaches validation and the handler.
 * No answer may be a 5xx, leave the envelope, or show a stack, a path or a database message.
 */

// PostgreSQL gets fewer runs: the same inputs, checked against the other SQL engine.
const RUNS = { pglite: 30, postgres: 12 } as const;

/** What a caller may put in a body: usually an object, sometimes anything at all. */
const anyBody: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.oneof(hostileString, fc.string({ maxLength: 12 })), anyJson, { maxKeys: 6 }) },
  { weight: 1, arbitrary: anyJson },
);

describe.each(backends())('REST fuzzing [%s]', (backend) => {
  let t: TestApp;
  let examples: Record<string, Doc>;

  beforeAll(async () => {
    t = await startTestApp(backend);
    const [item] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items LIMIT 1`);
    examples = validExamples(t.demo, item!.id);
  });
  afterAll(async () => t?.close());

  async function call(op: AnyOperation, input: unknown) {
    const doc = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Doc) : {};
    const { url, rest } = fillPath(op.path, doc);
    const headers = { 'x-api-key': t.demo.apiKeys.admin };
    const response =
      op.method === 'GET'
        ? await t.app.inject({ method: 'GET', url: `${url}${queryOf(rest)}`, headers })
        : await t.app.inject({
            method: op.method,
            url,
            headers: { ...headers, 'content-type': 'application/json' },
            // Path fields travel in the path; a non-object body goes as it is.
            payload: JSON.stringify(doc === input ? rest : input) ?? 'null',
          });
    return { status: response.statusCode, text: response.body };
  }

  it('has a valid example for every operation', () => {
    expect(Object.keys(examples).sort()).toEqual(OPERATIONS.map((op) => op.name).sort());
  });

  it.each(OPERATIONS.map((op) => [op.name, op] as const))(`%s: any input is answered in the envelope, never 5xx (seed ${FUZZ_SEED})`, async (_name, op) => {
    const valid = examples[op.name] ?? {};
    const input = fc.oneof({ weight: 3, arbitrary: mutationOf(valid) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: anyBody });
    await fuzz(
      fc.asyncProperty(input, async (sent) => expectV4Answer(await call(op, sent), sent)),
      RUNS[backend],
    );
  });
});
