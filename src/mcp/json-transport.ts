import type { ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCRequest,
  JSONRPCResultResponse,
  MessageExtraInfo,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';

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

  private readonly awaiting = new Set<RequestId>();
  private readonly answers: JSONRPCMessage[] = [];
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly batch: boolean,
  ) {}

  async start(): Promise<void> {}

  /** Feeds the POST's messages to the server; the response is written once every request has its answer. */
  receive(messages: JSONRPCMessage[], requests: JSONRPCRequest[], extra: MessageExtraInfo): void {
    for (const request of requests) this.awaiting.add(request.id);
    for (const message of messages) this.onmessage?.(message, extra);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Only answers go out: a notification has no stream to travel on here.
    if (!isAnswer(message)) return;
    this.answers.push(message);
    if (message.id !== undefined) this.awaiting.delete(message.id);
    if (this.awaiting.size > 0 || this.closed) return;
    const body = JSON.stringify(this.batch ? this.answers : this.answers[0]);
    this.res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}
