import type { Capability, Role } from './capabilities.js';
import { ROLE_CEILING } from './capabilities.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { badRequest, forbidden } from '../kit/errors.js';

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
  /** A dedicated user of one integration (its v2 bridge, its v4 successor), not a person. */
  readonly nonPersonal: boolean;
  readonly capabilities: ReadonlySet<Capability>;
  readonly credential: Credential;
}

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  role: Role;
  employee_id: string | null;
  non_personal: boolean;
  disabled_at: string | null;
  company_ids: string[];
  team_ids: string[];
  regions: string[];
}

/** Select list that loads a user with its companies and manager scope; `u` is the users alias. */
export const USER_COLUMNS = sql`u.id, u.email, u.display_name, u.role, u.employee_id, u.non_personal, u.disabled_at,
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
    nonPersonal: user.non_personal,
    capabilities: new Set(granted.filter((c) => ceiling.has(c)) as Capability[]),
    credential,
  };
}

/** What an access check reads of a caller, whatever its credential: a page's session has no Principal. */
export type Caller = Pick<Principal, 'role' | 'nonPersonal' | 'companyIds' | 'capabilities'>;

/** A user signed in on the pages acts as themselves: everything their role allows. */
export function signedInCaller(user: UserRow): Caller {
  return { role: user.role, nonPersonal: user.non_personal, companyIds: user.company_ids, capabilities: new Set(ROLE_CEILING[user.role]) };
}

/**
 * Administration (legacy keys, their successors, the migration's reports) is for people. An
 * integration's non-personal user is an admin of its company so that its key reaches the data its
 * capabilities cover, as the v2 key did; it never administers, whatever its key holds.
 */
export function requireHumanAdmin(caller: Pick<Caller, 'role' | 'nonPersonal'>, what: string): void {
  if (caller.role !== 'admin') throw forbidden('admin_only', `${what} is for admins; ask an admin of your company`);
  if (caller.nonPersonal) {
    throw forbidden(
      'non_personal_user',
      `${what} is for a person: this credential acts as an integration's non-personal user, which never administers keys or the migration; use a human admin's credential`,
    );
  }
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
