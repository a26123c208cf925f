import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kit/errors.js';
import { errorResult, resultFields, successResult, toolAnswerJson } from '../../src/mcp/tools.js';

/* An answer written from a result's already serialized JSON parses to what serializing the whole answer gives. */
describe('toolAnswerJson', () => {
  const data = { id: 'emp_1', name: 'Zoë "Q" Müller', tags: ['a\nb', '🚚'], nested: { n: 1.5, none: null } };
  const serialized = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
  const extra = { resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'svc' } } };

  it.each([7, 'call-"1"'])('a success, id %s, with and without extra fields', (id) => {
    const result = successResult(data);
    expect(JSON.parse(toolAnswerJson(id, result))).toEqual(serialized({ jsonrpc: '2.0', id, result }));
    expect(JSON.parse(toolAnswerJson(id, result, resultFields(extra)))).toEqual(serialized({ jsonrpc: '2.0', id, result: { ...result, ...extra } }));
    expect(JSON.parse(toolAnswerJson(id, result)).result.structuredContent).toEqual(data);
  });

  it('a failure, a success copied with more fields, and a result not made by successResult', () => {
    const failure = errorResult(new AppError(404, 'not_found', 'Employee emp_x not found'));
    expect(JSON.parse(toolAnswerJson(1, failure, resultFields(extra)))).toEqual(serialized({ jsonrpc: '2.0', id: 1, result: { ...failure, ...extra } }));
    const widened = { ...successResult(data), _meta: { note: 'kept' } };
    expect(JSON.parse(toolAnswerJson(1, widened))).toEqual(serialized({ jsonrpc: '2.0', id: 1, result: widened }));
    const handMade = { content: [{ type: 'text' as const, text: '{}' }], structuredContent: { other: true } };
    expect(JSON.parse(toolAnswerJson(1, handMade)).result.structuredContent).toEqual({ other: true });
  });
});
