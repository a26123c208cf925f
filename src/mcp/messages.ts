import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  type InitializeRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';

/* A body read as JSON-RPC messages, with SDK v1's schemas. */

/** The JSON-RPC message the body (or a batch's element) is; undefined when it is none. */
export function parseBody(body: unknown): JSONRPCMessage | undefined {
  const parsed = JSONRPCMessageSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

export const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'method' in message && 'id' in message;

/** The message when it is an initialize request; the cheap method test spares a schema parse on every other call. */
export function initializeRequest(message: JSONRPCMessage): (InitializeRequest & JSONRPCRequest) | undefined {
  return isRequest(message) && message.method === 'initialize' && isInitializeRequest(message) ? message : undefined;
}
