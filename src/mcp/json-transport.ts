import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest, JSONRPCResultResponse, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';

export type JsonRpcAnswer = JSONRPCResultResponse | JSONRPCErrorResponse;

const isAnswer = (message: JSONRPCMessage): message is JsonRpcAnswer => 'id' in message && ('result' in message || 'error' in message);

/**
 * Requests fed to an SDK server one by one, each answer handed back to the caller, which writes it as
 * the POST's `application/json` body (the Streamable HTTP form for requests that need no stream), or
 * as one element of a batch's. The SDK's own transport turns every request into a web
 * Request/Response pair and back; on the hot path (a read tool call) that conversion cost more than
 * the call itself. Requests that may need the stream (a write asking for approval) still go through
 * the SDK's transport.
 */
export class JsonResponseTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private closed = false;
  private readonly waiting = new Map<RequestId, (answer: JsonRpcAnswer | undefined) => void>();

  async start(): Promise<void> {}

  /** The server's answer to the request; undefined when the transport closed first. */
  answer(request: JSONRPCRequest, extra: MessageExtraInfo): Promise<JsonRpcAnswer | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting.set(request.id, resolve);
      this.onmessage?.(request, extra);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Only answers go out: a notification has no stream to travel on here.
    if (!isAnswer(message) || message.id === undefined) return;
    const resolve = this.waiting.get(message.id);
    this.waiting.delete(message.id);
    resolve?.(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const resolve of this.waiting.values()) resolve(undefined);
    this.waiting.clear();
    this.onclose?.();
  }
}
