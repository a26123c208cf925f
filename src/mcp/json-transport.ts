import type { ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest, JSONRPCResultResponse, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

const isAnswer = (message: JSONRPCMessage): message is JSONRPCResultResponse | JSONRPCErrorResponse =>
  'id' in message && ('result' in message || 'error' in message);

/**
 * One POST answered with one `application/json` body, the Streamable HTTP form for a request
 * that needs no stream, written straight to Node's response. The SDK's own transport turns
 * every request into a web Request/Response pair and back; on the hot path (a read tool call)
 * that conversion cost more than the call itself. Requests that may need the stream (a write
 * asking for approval) still go through the SDK's transport.
 */
export class JsonResponseTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private closed = false;

  constructor(private readonly res: ServerResponse) {}

  async start(): Promise<void> {}

  /** Feeds the POST's one request to the server; its answer is the response. */
  receive(request: JSONRPCRequest, extra: MessageExtraInfo): void {
    this.onmessage?.(request, extra);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Only the answer goes out: a notification has no stream to travel on here.
    if (!isAnswer(message) || this.closed) return;
    this.res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}
