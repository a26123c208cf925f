import { z } from 'zod';

/** The ten v4 capabilities. Not hierarchical: a write never implies the matching read. */
export const CAPABILITIES = [
  'mcp:employees:read',
  'mcp:orders:read',
  'mcp:inventory:read',
  'mcp:teams:read',
  'mcp:company:read',
  'mcp:employees:write',
  'mcp:orders:write',
  'mcp:inventory:write',
  'mcp:teams:write',
  'mcp:company:write',
] as const;

export type Capability = (typeof CAPABILITIES)[number];
export const CapabilitySchema = z.enum(CAPABILITIES);

/** Consent-screen wording of each capability (spec "Capabilities"). */
export const CAPABILITY_LABELS: Record<Capability, string> = {
  'mcp:employees:read': 'Read employees',
  'mcp:orders:read': 'Read orders',
  'mcp:inventory:read': 'Read inventory',
  'mcp:teams:read': 'Read teams',
  'mcp:company:read': 'Read company addresses',
  'mcp:employees:write': 'Create and update employees',
  'mcp:orders:write': 'Create orders',
  'mcp:inventory:write': 'Create and update inventory',
  'mcp:teams:write': 'Create and update teams',
  'mcp:company:write': 'Create company addresses',
};

export const ROLES = ['admin', 'manager', 'employee'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The most a role can ever exercise. A key's capabilities are intersected with its user's
 * ceiling on every request, so a role change narrows existing keys at once.
 */
export const ROLE_CEILING: Record<Role, readonly Capability[]> = {
  admin: CAPABILITIES,
  manager: [
    'mcp:employees:read',
    'mcp:employees:write',
    'mcp:orders:read',
    'mcp:orders:write',
    'mcp:inventory:read',
    'mcp:teams:read',
    'mcp:company:read',
  ],
  employee: ['mcp:inventory:read', 'mcp:employees:read', 'mcp:orders:read'],
};

/** Parses `a,b,c` or `all` (which the caller resolves against the user's role). */
export function parseCapabilityList(text: string): Capability[] | 'all' {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 1 && items[0] === 'all') return 'all';
  return z.array(CapabilitySchema).parse(items);
}
