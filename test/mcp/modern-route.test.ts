import type { FastifyRequest } from 'fastify';
import { classifyInboundRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { modernRoute } from '../../src/mcp/modern.js';

/*
 * modernRoute skips the SDK's classification when it could only answer "2025". These cases check the
 * shortcut against the SDK's own verdict, including the ones that look 2025 but are not.
 */

/** What the SDK alone decides, mapped as modernRoute maps it. */
function sdkVerdict(headers: Record<string, string>, body: unknown): string | undefined {
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    protocolVersionHeader: headers['mcp-protocol-version'],
    mcpMethodHeader: headers['mcp-method'],
    mcpNameHeader: headers['mcp-name'],
  });
  if (outcome.kind === 'modern') return 'modern';
  return outcome.kind === 'reject' && outcome.rung !== 'jsonrpc-shape' ? 'refused' : undefined;
}

const envelope = {
  [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
};
const call = (params: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, ...params } });
const modernHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami' };

const cases: Array<[string, Record<string, string>, unknown]> = [
  ['a 2025 session call', { 'mcp-protocol-version': '2025-11-25' }, call({})],
  ['a 2025-06-18 call with other _meta', { 'mcp-protocol-version': '2025-06-18' }, call({ _meta: { progressToken: 1 } })],
  ['initialize without a header', {}, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }],
  ['a notification', { 'mcp-protocol-version': '2025-11-25' }, { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ['a posted reply', { 'mcp-protocol-version': '2025-11-25' }, { jsonrpc: '2.0', id: 3, result: {} }],
  ['a batch', { 'mcp-protocol-version': '2025-11-25' }, [call({}), call({})]],
  ['a batch holding a modern claim', {}, [call({ _meta: envelope })]],
  ['a body that is not JSON-RPC', {}, { hello: 'world' }],
  ['a string body', {}, 'tools/call'],
  ['a 2026-07-28 call', modernHeaders, call({ _meta: envelope })],
  ['a claim without the header', {}, call({ _meta: envelope })],
  ['a claim under a 2025 header', { 'mcp-protocol-version': '2025-11-25' }, call({ _meta: envelope })],
  ['a malformed claim', modernHeaders, call({ _meta: { [PROTOCOL_VERSION_META_KEY]: 7 } })],
  ['the modern header without a claim', modernHeaders, call({})],
  ['initialize under the modern header', { 'mcp-protocol-version': '2026-07-28' }, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }],
  ['an unknown future version header', { 'mcp-protocol-version': '2027-01-01' }, call({})],
  ['a 2025 header with surrounding space', { 'mcp-protocol-version': ' 2025-11-25 ' }, call({})],
];

describe('modernRoute', () => {
  it.each(cases)('routes %s as the SDK classifies it', (_name, headers, body) => {
    const request = { method: 'POST', headers, body } as unknown as FastifyRequest;
    expect(modernRoute(request)).toBe(sdkVerdict(headers, body));
  });

  it('sends the modern cases to the modern leg (the table is not all 2025)', () => {
    const verdicts = cases.map(([, headers, body]) => sdkVerdict(headers, body));
    expect(verdicts).toContain('modern');
    expect(verdicts).toContain('refused');
    expect(verdicts).toContain(undefined);
  });
});
