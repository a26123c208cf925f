import { randomBytes } from 'node:crypto';
import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../access/principal.js';
import type { SharedState } from '../shared-state/index.js';

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
  /** Ends the session (nothing happens when there was none). */
  delete(id: string): Promise<void>;
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

/** A session nobody used for this long is gone: its client initializes again. */
export const DEFAULT_SESSION_IDLE_SECONDS = 60 * 60;

const sessionKey = (id: string) => `mcp:session:${id}`;

/** Parsed session records kept per store, each at most this long; beyond, the cache starts over (at most ~8 MiB). */
const PARSED_SESSIONS_KEPT = 1_000;
const PARSED_SESSION_MAX_CHARS = 4_096;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * Sessions as JSON records in the shared state, expiring when idle: with Redis every instance
 * serves every session; without it the process's own store serves the single instance. The id
 * alone grants nothing (a session answers only the principal it is bound to), so it is kept as is.
 * Every method throws SharedStateUnavailable while Redis is down.
 */
export function sharedSessionStore(shared: SharedState, idleSeconds = DEFAULT_SESSION_IDLE_SECONDS): SessionStore {
  // A session's record never changes, and every call of the session reads it: parsed once, frozen, shared.
  // Only small records are kept: a client's capabilities and info could make one as large as a request body.
  const parsedRecords = new Map<string, McpSession>();
  const parsed = (record: string): McpSession => {
    let session = parsedRecords.get(record);
    if (session === undefined) {
      session = deepFreeze(JSON.parse(record) as McpSession);
      if (record.length > PARSED_SESSION_MAX_CHARS) return session;
      if (parsedRecords.size >= PARSED_SESSIONS_KEPT) parsedRecords.clear();
      parsedRecords.set(record, session);
    }
    return session;
  };
  return {
    async create(session) {
      await shared.set(sessionKey(session.id), JSON.stringify(session), idleSeconds);
    },
    async get(id) {
      const record = await shared.getAndTouch(sessionKey(id), idleSeconds);
      return record === undefined ? undefined : parsed(record);
    },
    async delete(id) {
      await shared.delete(sessionKey(id));
    },
  };
}
