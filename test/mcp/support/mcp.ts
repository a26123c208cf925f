import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';

export interface ConnectOptions {
  /** Declares the elicitation capability and answers each approval request with this. */
  elicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>;
}

export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Approval requests the server sent. */
  elicitations: ElicitRequest[];
  close(): Promise<void>;
}

/** The official SDK client over Streamable HTTP, sending the key in X-API-KEY. */
export async function connect(url: string, apiKey: string, options: ConnectOptions = {}): Promise<Connected> {
  const client = new Client(
    { name: 'svc-mcp-test', version: '1.0.0' },
    { capabilities: options.elicit ? { elicitation: { form: {} } } : {} },
  );
  const elicitations: ElicitRequest[] = [];
  const answer = options.elicit;
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      elicitations.push(request);
      return answer(request);
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'x-api-key': apiKey } } });
  await client.connect(transport);
  return { client, transport, elicitations, close: () => client.close() };
}

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

/** The tool's JSON text block, parsed. */
export function textJson(result: ToolResult): any {
  const block = CallToolResultSchema.parse(result).content[0];
  if (block?.type !== 'text') throw new Error('expected a text block');
  return JSON.parse(block.text);
}

/** The structured result of a successful call, or the failure explained. */
export function data(result: ToolResult): any {
  if (result.isError) throw new Error(`tool failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** A JSON body, typed loosely for assertions. */
export async function jsonOf(response: Response): Promise<any> {
  return response.json();
}

/** A raw JSON-RPC POST, for what the SDK client would not send. */
export async function rawPost(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(body) });
}

export function initializeBody(protocolVersion = '2025-06-18', capabilities: Record<string, unknown> = {}) {
  return { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities, clientInfo: { name: 'raw', version: '1.0.0' } } };
}
