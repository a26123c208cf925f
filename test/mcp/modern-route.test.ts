import type { FastifyRequest } from 'fastify';
import { classifyInboundRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { modernRoute } from '../../src/mcp/modern.js';

/*
 * modernRoute skips the SDK's classification when it could only answer "2025", and for a plain
 * 2026-07-28 tool call ('direct', which the SDK would call modern), whose envelope's verdict it keeps.
 * These cases check both shortcuts against the SDK's own verdict, including the ones that look 2025
 * but are not, and envelopes the SDK refuses, each routed twice (the second from the kept verdict).
 */

/**
 * What the SDK alone decides, mapped as modernRoute maps it: under a 2026-07-28 header, a body the SDK
 * finds no request of that revision (a batch, a reply, a bad id) is that revision's refusal too.
 */
function sdkVerdict(headers: Record<string, string>, body: unknown): string | undefined {
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    protocolVersionHeader: headers['mcp-protocol-version'],
    mcpMethodHeader: headers['mcp-method'],
    mcpNameHeader: headers['mcp-name'],
  });
  if (outcome.kind === 'modern') return 'modern';
  if (outcome.kind === 'reject' && outcome.rung !== 'jsonrpc-shape') return 'refused';
  return headers['mcp-protocol-version'] === '2026-07-28' ? 'refused' : undefined;
}

const envelope = {
  [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
};
const call = (params: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, ...params } });
const modernHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami' };
const { 'io.modelcontextprotocol/clientCapabilities': _capabilities, ...withoutCapabilities } = envelope;

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
  ['an envelope without the client capabilities', modernHeaders, call({ _meta: withoutCapabilities })],
  ['client capabilities that are not an object', modernHeaders, call({ _meta: { ...envelope, 'io.modelcontextprotocol/clientCapabilities': 'all' } })],
  ['client info without a version', modernHeaders, call({ _meta: { ...envelope, 'io.modelcontextprotocol/clientInfo': { name: 'test' } } })],
  ['a valid envelope under another tool header', { ...modernHeaders, 'mcp-name': 'list_teams' }, call({ _meta: envelope })],
  ['a valid envelope in a call that also carries a result', modernHeaders, { ...call({ _meta: envelope }), result: {} }],
  ['the modern version header with a trailing space', { ...modernHeaders, 'mcp-protocol-version': '2026-07-28 ' }, call({ _meta: envelope })],
  ['a 2026-07-28 call with a null id', modernHeaders, { ...call({ _meta: envelope }), id: null }],
  ['a 2026-07-28 call with an object id', modernHeaders, { ...call({ _meta: envelope }), id: { n: 1 } }],
  ['a batch under the modern header', modernHeaders, [call({}), call({})]],
  ['a posted reply under the modern header', modernHeaders, { jsonrpc: '2.0', id: 3, result: {} }],
];

/** modernRoute's answer as the SDK would put it: a direct call is one the SDK classifies as modern. */
const asSdk = (route: string | undefined) => (route === 'direct' ? 'modern' : route);

describe('modernRoute', () => {
  it.each(cases)('routes %s as the SDK classifies it', (_name, headers, body) => {
    const request = { method: 'POST', headers, body } as unknown as FastifyRequest;
    expect(asSdk(modernRoute(request))).toBe(sdkVerdict(headers, body));
    // Again: an envelope's verdict is kept after the first request.
    expect(asSdk(modernRoute(request))).toBe(sdkVerdict(headers, body));
  });

  it('answers a plain 2026-07-28 tool call directly, and only that', () => {
    const routed = cases.map(([name, headers, body]) => [name, modernRoute({ method: 'POST', headers, body } as unknown as FastifyRequest)]);
    expect(routed.filter(([, route]) => route === 'direct').map(([name]) => name)).toEqual(['a 2026-07-28 call']);
  });

  it('sends the modern cases to the modern leg (the table is not all 2025)', () => {
    const verdicts = cases.map(([, headers, body]) => sdkVerdict(headers, body));
    expect(verdicts).toContain('modern');
    expect(verdicts).toContain('refused');
    expect(verdicts).toContain(undefined);
  });
});
