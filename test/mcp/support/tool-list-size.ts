import type { Principal } from '../../../src/access/principal.js';

/** What a tool list holds, as far as its size goes. */
interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
}

export interface ToolListSize {
  tools: number;
  /** What a client sends a model per conversation: each tool as `{name, description, input_schema}` (the Anthropic Messages form), JSON. */
  modelBytes: number;
  /** The `tools/list` result as JSON: titles, output schemas, annotations, icons and `_meta` too. */
  listBytes: number;
}

/** A rough token count: about four bytes of English and JSON per token. */
export const approxTokens = (bytes: number): number => Math.round(bytes / 4);

export function toolListSize(tools: readonly ListedTool[]): ToolListSize {
  const modelBytes = tools.reduce(
    (sum, t) => sum + Buffer.byteLength(JSON.stringify({ name: t.name, description: t.description, input_schema: t.inputSchema })),
    0,
  );
  return { tools: tools.length, modelBytes, listBytes: Buffer.byteLength(JSON.stringify({ tools })) };
}

/** The origin the listed icons point at when measuring: a fixed one, so that sizes do not depend on a port. */
export const MEASURED_BASE_URL = 'http://127.0.0.1:3001';

/** A principal that may call every tool: the list as an admin's client sees it, no tool marked unavailable. */
export function everyCapability(capabilities: readonly string[]): Principal {
  return { userId: 'usr_measure', capabilities: new Set(capabilities), credential: { kind: 'api_key', keyId: 'key_measure' } } as unknown as Principal;
}
