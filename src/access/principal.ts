import type { Capability, Role } from './capabilities.js';
import { ROLE_CEILING } from './capabilities.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { badRequest, forbidden } from '../errors.js';

export type Credential =
  | { kind: 'api_key'; keyId: string }
  | { kind: 'id_token'; issuer: string; subject: string }
  /** An OAuth access token of an MCP client's connection (grant); accepted on /mcp only. */
  | { kind: 'oauth'; clientId: string; grantId: string; scopes: Capability[] };

/**
 * Who is calling and what they may reach. Read-only: an API key's principal is built when the key is
 * loaded and shared by its requests until a change to keys, users or scope drops it.
 */
export interface Principal {
  readonly userId: string;
  readonly email: string;
  readonly displayName: string;
  readonly role: Role;
  /** Companies the user belongs to (an admin may administer several). */
  readonly companyIds: readonly string[];
  /** Manager scope: teams and regions (ISO country codes). Empty for other roles. */
  readonly teamIds: readonly string[];
  readonly regions: readonly string[];
  /** The employee record of an employee-role user. */
  readonly employeeId: string | null;
  readonly capabilities: ReadonlySet<Capability>;
  readonly credential: Credential;
}

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  role: Role;
  employee_id: string | null;
  disabled_at: string | null;
  company_ids: string[];
  team_ids: string[];
  regions: string[];
}

/** Select list that loads a user with its companies and manager scope; `u` is the users alias. */
export const USER_COLUMNS = sql`u.id, u.email, u.display_name, u.role, u.employee_id, u.disabled_at,
  ARRAY(SELECT uc.company_id FROM user_companies uc WHERE uc.user_id = u.id ORDER BY uc.company_id) AS company_ids,
  ARRAY(SELECT mt.team_id FROM manager_teams mt WHERE mt.user_id = u.id ORDER BY mt.team_id) AS team_ids,
  ARRAY(SELECT mr.country FROM manager_regions mr WHERE mr.user_id = u.id ORDER BY mr.country) AS regions`;

/** The granted capabilities narrowed live by the user's role. */
export function principalFromUser(user: UserRow, granted: readonly string[], credential: Credential): Principal {
  const ceiling = new Set<string>(ROLE_CEILING[user.role]);
  return {
    userId: user.id,
    email: user.email,
    displayName: user.display_name,
    role: user.role,
    companyIds: user.company_ids,
    teamIds: user.role === 'manager' ? user.team_ids : [],
    regions: user.role === 'manager' ? user.regions : [],
    employeeId: user.employee_id,
    capabilities: new Set(granted.filter((c) => ceiling.has(c)) as Capability[]),
    credential,
  };
}

export async function loadUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const rows = await db.query<UserRow>(sql`SELECT ${USER_COLUMNS} FROM users u WHERE lower(u.email) = lower(${email})`);
  return rows[0];
}

/**
 * The company a create lands in. A caller in one company needs not name it; an admin of
 * several must pass `companyId`, and may only name a company they belong to.
 */
export function resolveWriteCompany(principal: Principal, companyId: string | undefined): string {
  if (companyId !== undefined) {
    if (!principal.companyIds.includes(companyId)) {
      throw forbidden('company_not_accessible', `You do not administer company ${companyId}`);
    }
    return companyId;
  }
  const [only, ...rest] = principal.companyIds;
  if (only === undefined) throw forbidden('no_company', 'Your user belongs to no company');
  if (rest.length > 0) {
    throw badRequest(
      'company_required',
      `You administer several companies: pass companyId (one of ${principal.companyIds.join(', ')})`,
      [{ field: 'companyId', rule: 'required', message: `one of ${principal.companyIds.join(', ')}` }],
    );
  }
  return only;
}

/** Narrows a read to one company when the caller names it; refuses a company outside their reach. */
export function readCompanies(principal: Principal, companyId: string | undefined): readonly string[] {
  if (companyId === undefined) return principal.companyIds;
  if (!principal.companyIds.includes(companyId)) {
    throw forbidden('company_not_accessible', `You do not administer company ${companyId}`);
  }
  return [companyId];
}
