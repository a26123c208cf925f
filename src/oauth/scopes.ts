import { CAPABILITY_LABELS, type Capability } from '../access/capabilities.js';
import { DOMAIN_OPERATIONS } from '../operations/domain-table.js';

/**
 * The only scopes OAuth advertises and grants (spec "OAuth 2.1", discovery rule 4). The other five
 * capabilities exist and are enforced, but an MCP client that needs them uses an API key.
 */
export const OAUTH_SCOPES = [
  'mcp:employees:read',
  'mcp:employees:write',
  'mcp:orders:read',
  'mcp:orders:write',
  'mcp:inventory:read',
] as const satisfies readonly Capability[];

export type OAuthScope = (typeof OAUTH_SCOPES)[number];

export function isOAuthScope(value: string): value is OAuthScope {
  return (OAUTH_SCOPES as readonly string[]).includes(value);
}

export interface PermissionDescription {
  scope: Capability;
  label: string;
  readOnly: boolean;
  /** The MCP tools this permission unlocks, from the operation table. */
  tools: string[];
}

/** What a permission means on the consent and connections pages. */
export function describePermission(scope: Capability): PermissionDescription {
  return {
    scope,
    label: CAPABILITY_LABELS[scope],
    readOnly: scope.endsWith(':read'),
    tools: DOMAIN_OPERATIONS.filter((op) => op.origin === 'spec' && op.capability === scope).map((op) => op.name),
  };
}

/** Space-separated scope text to the OAuth scopes in it, unknown ones dropped. */
export function oauthScopesIn(text: string | undefined): OAuthScope[] {
  return (text ?? '').split(' ').filter(isOAuthScope);
}
