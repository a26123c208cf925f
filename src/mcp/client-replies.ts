import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '@modelcontextprotocol/sdk/types.js';
import { isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';

export type ClientReply = JSONRPCResultResponse | JSONRPCErrorResponse;

interface Waiting {
  sessionId: string;
  deliver(reply: ClientReply): void;
}

/**
 * Routes the client's replies to server-to-client requests (elicitation) back to the request
 * that asked. Each POST gets a fresh SDK server and transport, whose request ids restart at 0,
 * and the reply arrives on a later POST: so outgoing request ids are renamed to process-unique
 * ones here, and a reply is handed to the transport that is waiting for it, under its old id.
 * The wait lives in this process, which holds the tool call; session metadata is shared.
 */
export class ClientReplies {
  private readonly waiting = new Map<string, Waiting>();

  /** Wraps the transport's send; the returned function forgets what it still waits for. */
  attach(transport: Transport, sessionId: string): () => void {
    const send = transport.send.bind(transport);
    const mine = new Set<string>();
    transport.send = async (message, options) => {
      if (!isJSONRPCRequest(message)) return send(message, options);
      const routedId = `svc-${randomUUID()}`;
      mine.add(routedId);
      this.waiting.set(routedId, {
        sessionId,
        deliver: (reply) => transport.onmessage?.({ ...reply, id: message.id }),
      });
      return send({ ...message, id: routedId }, options);
    };
    return () => {
      for (const id of mine) this.waiting.delete(id);
    };
  }

  /** Hands a reply to its waiting request; false when none in this session waits for it. */
  deliver(sessionId: string, reply: ClientReply): boolean {
    const id = String(reply.id);
    const entry = this.waiting.get(id);
    if (entry?.sessionId !== sessionId) return false;
    this.waiting.delete(id);
    entry.deliver(reply);
    return true;
  }

  /** A session ended (or, without one, the server is closing): whatever still waits on the client gets an error. */
  end(sessionId?: string): void {
    for (const [id, entry] of this.waiting) {
      if (sessionId !== undefined && entry.sessionId !== sessionId) continue;
      this.waiting.delete(id);
      entry.deliver({ jsonrpc: '2.0', id, error: { code: -32001, message: 'The MCP session ended' } });
    }
  }
}
