import { randomBytes } from 'node:crypto';
import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../access/principal.js';

/**
 * What an MCP session is, as plain data: no transport or server object lives in it, so any
 * instance that can read the store can serve the session's next request.
 */
export interface McpSession {
  id: string;
  /** The user and credential that initialized the session; only they may use it. */
  boundTo: string;
  protocolVersion: string;
  clientCapabilities: ClientCapabilities;
  clientInfo: Implementation;
  createdAt: number;
}

export interface SessionStore {
  create(session: McpSession): Promise<void>;
  /** The live session, its idle clock restarted; undefined when unknown, ended or expired. */
  get(id: string): Promise<McpSession | undefined>;
  /** Ends the session; false when there was none. */
  delete(id: string): Promise<boolean>;
  close(): Promise<void>;
}

/** 256 bits from the CSPRNG, URL-safe: a session id cannot be guessed. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** The identity a session is bound to: the user, and the very credential (key or OAuth grant) they used. */
export function principalBinding(principal: Principal): string {
  const credential = principal.credential;
  switch (credential.kind) {
    case 'api_key':
      return `${principal.userId}|api_key:${credential.keyId}`;
    case 'oauth':
      return `${principal.userId}|oauth:${credential.clientId}:${credential.grantId}`;
    case 'id_token':
      return `${principal.userId}|id_token:${credential.issuer}:${credential.subject}`;
  }
}

export const DEFAULT_SESSION_IDLE_MS = 60 * 60 * 1000;

/** One process's sessions; idle ones expire. The Redis store (shared state) takes its place for several instances. */
export class InMemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, { session: McpSession; lastSeen: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly now: () => number,
    private readonly idleMs = DEFAULT_SESSION_IDLE_MS,
  ) {
    // A sweep bounds memory held by sessions their clients abandoned without DELETE.
    this.sweeper = setInterval(() => this.sweep(), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  async create(session: McpSession): Promise<void> {
    this.sessions.set(session.id, { session, lastSeen: this.now() });
  }

  async get(id: string): Promise<McpSession | undefined> {
    const entry = this.sessions.get(id);
    if (!entry) return undefined;
    const now = this.now();
    if (now - entry.lastSeen > this.idleMs) {
      this.sessions.delete(id);
      return undefined;
    }
    entry.lastSeen = now;
    return entry.session;
  }

  async delete(id: string): Promise<boolean> {
    return this.sessions.delete(id);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, entry] of this.sessions) if (now - entry.lastSeen > this.idleMs) this.sessions.delete(id);
  }
}
