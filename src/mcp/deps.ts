import type { OAuthDeps } from '../oauth/routes.js';

/** What the MCP endpoint uses: the HTTP frame's services and the OAuth server whose tokens it accepts. */
export type McpDeps = OAuthDeps;
