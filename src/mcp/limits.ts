/*
 * What one credential may ask of the MCP endpoint at once, and how large one request may be: the
 * bounds that keep one client from holding the instance (bench/mcp-flood.ts).
 */

/** The largest MCP body: a tool call's arguments are a few kilobytes; larger is refused before it is read. */
export const MCP_BODY_LIMIT_BYTES = 64 * 1024;
/** MCP requests one credential may have in flight on one instance (an approval's stream holds its place). */
export const MCP_IN_FLIGHT_PER_CREDENTIAL = 8;
/**
 * The most messages in one JSON-RPC batch (2025-03-26). A batch holds one place in flight and runs its
 * calls one after another, so this bounds how long one POST can keep its place: a client wanting more
 * sends more POSTs, each counted against the credential's places like any other.
 */
export const MCP_BATCH_MAX_MESSAGES = 16;
