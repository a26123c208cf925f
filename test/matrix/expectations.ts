import { CAPABILITIES, ROLE_CEILING, type Capability, type Role } from '../../src/access/capabilities.js';
import type { AnyOperation } from '../../src/operations/operation.js';
import { OAUTH_SCOPES, isOAuthScope } from '../../src/oauth/scopes.js';

/*
 * The access matrix's one source of truth: the outcome every (operation × surface × credential)
 * cell must have, derived from the spec's rules (Authentication, Capabilities, the scoping rules
 * 1–3 of "What the service does", the v2 scope table) and the operation table, never listed cell
 * by cell. The test observes each cell on its surface and compares with `expected`.
 */

export type Surface = 'rest' | 'mcp' | 'cli' | 'v2';

export const CREDENTIALS = [
  /** Admin of both demo companies, a key holding exactly the operation's capability. */
  'capable_key',
  /** The same admin, a key holding every capability but the operation's. */
  'incapable_key',
  /** The demo manager (team Engineering, region DE), every capability of the role; targets Sofía (Sales, ES). */
  'manager_key',
  /** Eve, an employee, every capability of the role; targets another employee's record. */
  'employee_key',
  /** The admin of a third company, every capability; targets Acme's records. */
  'foreign_admin_key',
  /** The successor v4 key of Acme's legacy key: its non-personal user (an admin of Acme), every capability. */
  'successor_key',
  /** A legacy v2 key of Acme holding every v2 scope. */
  'legacy_key',
  /** The Acme v2 key lacking the route's scope (v2 only). */
  'legacy_key_unscoped',
  /** A legacy v2 key of Globex holding every v2 scope, sent at Acme's records (v2 only). */
  'legacy_key_foreign',
  /** A disabled legacy v2 key (v2 only). */
  'legacy_key_disabled',
  /** The admin's OAuth access token with all five OAuth scopes. */
  'oauth_scoped',
  /** The admin's OAuth access token with the five scopes less the operation's capability. */
  'oauth_unscoped',
  'revoked_key',
  'revoked_token',
  'expired_token',
  /** A key, and an OAuth token, of an admin who was disabled after they were issued. */
  'disabled_user_key',
  'disabled_user_token',
  'no_credential',
] as const;
export type Credential = (typeof CREDENTIALS)[number];

export type Outcome =
  | 'ok'
  | 'unauthenticated'
  | 'not_user_bound'
  | 'missing_capability'
  | 'insufficient_scope'
  | 'role_forbidden'
  /** Administration refused to an integration's non-personal user. */
  | 'non_personal_forbidden'
  | 'company_forbidden'
  | 'scope_forbidden'
  | 'not_found'
  | 'rules_refused'
  | 'missing_scope'
  /** A successful list that shows a record outside the caller's reach. */
  | 'leak';

/**
 * What a cell's input targets, and how the operation reacts when the caller cannot reach it.
 * - none: no target (identity, catalog); a list: rows filtered by scope, never refused;
 * - id: a record addressed by id (path or body): out of reach reads as absent, 404;
 * - employee_ref: an order's employeeId: a rule of order placement, 422 (validate: valid false);
 * - company: a companyId the caller does not belong to: 403 company_not_accessible;
 * - placement: a created record placed in a company, team and country: 403 outside company, else 403 out of scope.
 */
export type Addressing = 'none' | 'list' | 'id' | 'employee_ref' | 'company' | 'placement';

/** The resource a scoped credential's target belongs to (all in Acme): Sofía's records, team Sales, Acme itself. */
export type Resource = 'employee' | 'team' | 'company';

export interface Target {
  addressing: Addressing;
  resource: Resource;
}

/** Administration of the migration: human admins only, never an integration's non-personal user, whatever its key holds. */
export const HUMAN_ADMIN_OPERATIONS: ReadonlySet<string> = new Set([
  'list_legacy_keys',
  'get_legacy_key',
  'get_legacy_key_plan',
  'mint_legacy_key_successor',
  'disable_legacy_key',
  'enable_legacy_key',
  'get_shadow_report',
]);

/** Operations restricted to a role by their own rule (their descriptions): admins only. */
export const ADMIN_ONLY_OPERATIONS: ReadonlySet<string> = new Set(['record_order_event', ...HUMAN_ADMIN_OPERATIONS]);

interface PrincipalModel {
  role: Role;
  /** Granted capabilities before the role ceiling narrows them. */
  granted: readonly Capability[];
  kind: 'api_key' | 'oauth';
  /** The credential's input is the owner's (in reach) or the out-of-scope target. */
  reach: 'owner' | 'manager' | 'employee' | 'foreign';
  /** A dedicated integration user, not a person. */
  nonPersonal?: boolean;
}

const allBut = (capability: Capability | null) => CAPABILITIES.filter((c) => c !== capability);

/** The principal each valid v4 credential resolves to; undefined for those refused at authentication. */
function principalOf(credential: Credential, op: AnyOperation): PrincipalModel | undefined {
  const admin = (granted: readonly Capability[], kind: PrincipalModel['kind'] = 'api_key'): PrincipalModel => ({ role: 'admin', granted, kind, reach: 'owner' });
  switch (credential) {
    case 'capable_key':
      return admin(op.capability ? [op.capability] : ['mcp:employees:read']);
    case 'incapable_key':
      return admin(allBut(op.capability));
    case 'manager_key':
      return { role: 'manager', granted: ROLE_CEILING.manager, kind: 'api_key', reach: 'manager' };
    case 'employee_key':
      return { role: 'employee', granted: ROLE_CEILING.employee, kind: 'api_key', reach: 'employee' };
    case 'foreign_admin_key':
      return { role: 'admin', granted: CAPABILITIES, kind: 'api_key', reach: 'foreign' };
    case 'successor_key':
      // An admin of Acme, so it reaches Acme's records like the v2 key it replaces.
      return { role: 'admin', granted: CAPABILITIES, kind: 'api_key', reach: 'owner', nonPersonal: true };
    case 'oauth_scoped':
      return admin(OAUTH_SCOPES, 'oauth');
    case 'oauth_unscoped':
      return admin(OAUTH_SCOPES.filter((s) => s !== op.capability), 'oauth');
    default:
      return undefined;
  }
}

/** Spec "What the service does", rules 2 and 3, and scope.ts: who reaches Sofía's records, team Sales, company Acme. */
function reaches(reach: PrincipalModel['reach'], resource: Resource): boolean {
  switch (reach) {
    case 'owner':
      return true;
    case 'foreign':
      return false;
    case 'manager':
      // Sofía is in Sales and Spain: outside the manager's team and region. Company-wide data is shared.
      return resource === 'company';
    case 'employee':
      // Eve reads only her own record; she belongs to Sales (her own team) and to Acme.
      return resource !== 'employee';
  }
}

const RESOURCES: readonly Resource[] = ['employee', 'team', 'company'];

/** What a scoped credential must never be shown: the target resources beyond its reach. */
export function unreachable(credential: Credential): Resource[] {
  const reach =
    credential === 'manager_key' ? 'manager' : credential === 'employee_key' ? 'employee' : ['foreign_admin_key', 'legacy_key_foreign'].includes(credential) ? 'foreign' : undefined;
  return reach ? RESOURCES.filter((resource) => !reaches(reach, resource)) : [];
}

function beyondReach(target: Target, reach: PrincipalModel['reach']): Outcome {
  if (reaches(reach, target.resource)) return 'ok';
  switch (target.addressing) {
    case 'none':
    case 'list':
      return 'ok';
    case 'id':
      return 'not_found';
    case 'employee_ref':
      return 'rules_refused';
    case 'company':
      return 'company_forbidden';
    case 'placement':
      return reach === 'foreign' ? 'company_forbidden' : 'scope_forbidden';
  }
}

/** Whether the cell exists: MCP serves the spec operations only; the CLI takes API keys; v2 has its own credentials. */
export function applies(op: AnyOperation, surface: Surface, credential: Credential): boolean {
  if (surface === 'mcp' && op.origin !== 'spec') return false;
  if (credential === 'incapable_key' || credential === 'oauth_unscoped') {
    if (op.capability === null) return false;
  }
  const v2Only = credential === 'legacy_key_unscoped' || credential === 'legacy_key_foreign' || credential === 'legacy_key_disabled';
  if (surface === 'v2') {
    return ['legacy_key', 'legacy_key_unscoped', 'legacy_key_foreign', 'legacy_key_disabled', 'capable_key', 'oauth_scoped', 'no_credential'].includes(credential);
  }
  if (v2Only) return false;
  if (surface === 'cli') return !credential.includes('token') && credential !== 'oauth_scoped' && credential !== 'oauth_unscoped';
  return true;
}

/** The outcome of a v4 surface (REST, MCP, CLI) cell. */
export function expected(op: AnyOperation, surface: Exclude<Surface, 'v2'>, credential: Credential, target: Target): Outcome {
  if (credential === 'legacy_key') return 'not_user_bound';
  // Spec Authentication rule 7: on REST a bearer is an identity-provider ID token, never an OAuth access token.
  if (surface === 'rest' && credential.startsWith('oauth')) return 'unauthenticated';
  const principal = principalOf(credential, op);
  // Revoked, expired, disabled (behaviour 1 and 2 of "States") and absent credentials.
  if (!principal) return 'unauthenticated';
  const held = new Set(principal.granted.filter((c) => ROLE_CEILING[principal.role].includes(c)));
  if (op.capability !== null && !held.has(op.capability)) {
    // OAuth can step up to a scope it may grant; the other five capabilities are an ordinary tool error.
    return principal.kind === 'oauth' && isOAuthScope(op.capability) ? 'insufficient_scope' : 'missing_capability';
  }
  if (ADMIN_ONLY_OPERATIONS.has(op.name) && principal.role !== 'admin') return 'role_forbidden';
  if (HUMAN_ADMIN_OPERATIONS.has(op.name) && principal.nonPersonal) return 'non_personal_forbidden';
  return beyondReach(target, principal.reach);
}

export interface V2RouteModel {
  scope: string;
  passthrough: boolean;
}

/** The outcome of a v2 cell: v2 takes legacy keys only, checks the route's v2 scope, then the bridge's reach. */
export function expectedV2(route: V2RouteModel, credential: Credential, target: Target | undefined): Outcome {
  switch (credential) {
    case 'legacy_key':
      return 'ok';
    case 'legacy_key_unscoped':
      return 'missing_scope';
    case 'legacy_key_foreign':
      // A v2 key is bound to its company: creations land there; Acme's records are beyond its reach.
      if (route.passthrough || !target) return 'ok';
      return target.addressing === 'company' || target.addressing === 'placement' ? 'ok' : beyondReach(target, 'foreign');
    default:
      return 'unauthenticated';
  }
}
