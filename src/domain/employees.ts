import type { Principal } from '../access/principal.js';
import { readCompanies, resolveWriteCompany } from '../access/principal.js';
import { employeeScope, teamScope, wholeCompanies } from '../access/scope.js';
import { baseUrlOf } from '../kit/config.js';
import type { DomainDeps } from './deps.js';
import type { Queryable } from '../store/db.js';
import { pgErrorCode, UNIQUE_VIOLATION } from '../store/db.js';
import { newId } from '../store/ids.js';
import { paginate, type PageRequest } from '../store/paging.js';
import { and, containsText, join, raw, sql, type Sql } from '../store/sql.js';
import { badRequest, conflict, forbidden, notFound } from '../kit/errors.js';
import { ensureTeamByName } from './teams.js';

/** API field -> column of the plain employee fields (an allowlist: only these reach SQL as identifiers). */
const FIELD_COLUMNS = {
  displayName: 'display_name',
  email: 'email',
  personalEmail: 'personal_email',
  country: 'country',
  jobTitle: 'job_title',
  department: 'department',
  division: 'division',
  taxId: 'tax_id',
  addressOne: 'address_one',
  addressTwo: 'address_two',
  city: 'city',
  state: 'state',
  zipCode: 'zip_code',
  phone: 'phone',
} as const;

type FieldName = keyof typeof FIELD_COLUMNS;
type EmployeeFields = { [K in FieldName]?: string | null | undefined };

export type NewEmployee = EmployeeFields & {
  displayName: string;
  email: string;
  companyId?: string | undefined;
  teamName?: string | null | undefined;
  sendInvitation: boolean;
};

export type EmployeeChanges = EmployeeFields & { teamName?: string | null | undefined };

export type EmployeeRecord = { [K in FieldName]: string | null } & {
  id: string;
  companyId: string;
  displayName: string;
  email: string;
  teamName: string | null;
  hasActiveLogin: boolean;
  createdAt: string;
  updatedAt: string;
};

/** A login is active while a non-disabled user row is linked to the employee. */
const HAS_ACTIVE_LOGIN = sql`EXISTS (SELECT 1 FROM users u WHERE u.employee_id = e.id AND u.disabled_at IS NULL)`;

const EMPLOYEE_COLUMNS = sql`e.id, e.company_id AS "companyId", ${join(
  Object.entries(FIELD_COLUMNS).map(([field, column]) => raw(`e.${column} AS "${field}"`)),
  ', ',
)}, t.name AS "teamName",
  ${HAS_ACTIVE_LOGIN} AS "hasActiveLogin", e.created_at AS "createdAt", e.updated_at AS "updatedAt"`;

const EMPLOYEE_FROM = sql`employees e LEFT JOIN teams t ON t.id = e.team_id`;

/** Only the street line makes a stored delivery address; the employee's country is the address country. */
const HAS_DELIVERY_ADDRESS = sql`e.address_one IS NOT NULL`;

export interface EmployeeFilters {
  companyId?: string | undefined;
  query?: string | undefined;
  teamName?: string | undefined;
  country?: string | undefined;
}

export async function listEmployees(db: Queryable, p: Principal, input: PageRequest & EmployeeFilters) {
  const companies = readCompanies(p, input.companyId);
  const filters = [employeeScope(p, companies)];
  if (input.query) {
    filters.push(containsText(input.query, [sql`e.display_name`, sql`e.email`]));
  }
  if (input.teamName) filters.push(sql`lower(t.name) = lower(${input.teamName})`);
  if (input.country) filters.push(sql`e.country = ${input.country}`);
  return paginate<EmployeeRecord>(db, {
    columns: EMPLOYEE_COLUMNS,
    from: EMPLOYEE_FROM,
    where: and(filters),
    key: sql`e.id`,
    pageIndex: 'employees_company_id_idx',
    filters: { companyId: input.companyId, query: input.query, teamName: input.teamName, country: input.country },
    everyRowOf: wholeCompanies('employees', companies, filters, p.role === 'admin'),
  }, input);
}

/** The read of one employee the principal may see (also what bench/reference.ts runs bare). */
export const visibleEmployeeQuery = (p: Principal, id: string): Sql =>
  sql`SELECT ${EMPLOYEE_COLUMNS} FROM ${EMPLOYEE_FROM} WHERE e.id = ${id} AND ${employeeScope(p, p.companyIds)}`;

async function findVisible(db: Queryable, p: Principal, id: string): Promise<EmployeeRecord | undefined> {
  const [employee] = await db.query<EmployeeRecord>(visibleEmployeeQuery(p, id));
  return employee;
}

export async function getEmployee(db: Queryable, p: Principal, id: string): Promise<EmployeeRecord> {
  const employee = await findVisible(db, p, id);
  if (!employee) throw notFound('Employee', id);
  return employee;
}

export async function listAvailableCountries(db: Queryable, p: Principal, companyId: string | undefined) {
  const rows = await db.query<{ country: string }>(sql`
    SELECT DISTINCT e.country FROM employees e
    WHERE ${employeeScope(p, readCompanies(p, companyId))} AND e.country IS NOT NULL AND ${HAS_DELIVERY_ADDRESS}
    ORDER BY e.country`);
  return { countries: rows.map((r) => r.country) };
}

/**
 * The team an employee joins, by name. Admins get a missing team created; managers may only
 * name teams they are scoped to, so they cannot widen their own reach.
 */
async function teamIdForName(tx: Queryable, p: Principal, companyId: string, name: string): Promise<string> {
  const [visible] = await tx.query<{ id: string }>(sql`
    SELECT t.id FROM teams t WHERE lower(t.name) = lower(${name}) AND ${teamScope(p, [companyId])}`);
  if (visible) return visible.id;
  if (p.role !== 'admin') {
    throw forbidden('team_not_in_scope', `Team "${name}" is not one of your teams; you may only assign employees to your own teams`, [
      { field: 'teamName', rule: 'in_scope', message: 'must name one of your teams' },
    ]);
  }
  return (await ensureTeamByName(tx, companyId, name)).id;
}

/** Team id to store: undefined leaves it alone, null removes the employee from their team. */
async function teamIdFor(tx: Queryable, p: Principal, companyId: string, teamName: string | null | undefined) {
  if (teamName === undefined) return undefined;
  return teamName === null ? null : teamIdForName(tx, p, companyId, teamName);
}

/** Maps the unique (company, lower(email)) index to a 409; other failures pass through. */
async function uniqueEmail<T>(email: string | null | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (pgErrorCode(error) === UNIQUE_VIOLATION) {
      throw conflict('employee_email_taken', `An employee with email ${email} already exists in this company`, [
        { field: 'email', rule: 'unique', message: 'employee emails are unique within a company (case-insensitive)' },
      ]);
    }
    throw error;
  }
}

/**
 * Reads back the written employee under the caller's scope. A manager whose write would put
 * the employee beyond their reach gets 403, and the caller's transaction rolls the write back.
 */
async function readBackInScope(tx: Queryable, p: Principal, id: string): Promise<EmployeeRecord> {
  const employee = await findVisible(tx, p, id);
  if (!employee) {
    throw forbidden('out_of_scope', 'The employee would fall outside your teams and regions; nothing was written', [
      { field: 'teamName', rule: 'in_scope', message: 'must be one of your teams, or country one of your regions' },
      { field: 'country', rule: 'in_scope', message: 'must be one of your regions, or teamName one of your teams' },
    ]);
  }
  return employee;
}

/** The given plain fields as [column, value] pairs, in FIELD_COLUMNS order. */
function columnValues(fields: EmployeeFields): Array<[string, string | null]> {
  return (Object.keys(FIELD_COLUMNS) as FieldName[]).flatMap((field): Array<[string, string | null]> => {
    const value = fields[field];
    return value === undefined ? [] : [[FIELD_COLUMNS[field], value]];
  });
}

export const INVITATION_SUBJECT = 'You are invited to the Device Lifecycle dashboard';

async function queueInvitation(core: DomainDeps, tx: Queryable, employee: EmployeeRecord): Promise<void> {
  const [company] = await tx.query<{ name: string }>(sql`SELECT name FROM companies WHERE id = ${employee.companyId}`);
  const body = [
    `Hello ${employee.displayName},`,
    '',
    `You have been invited to the Device Lifecycle dashboard of ${company?.name ?? 'your company'}.`,
    `Sign in with your work email (${employee.email}) at:`,
    '',
    baseUrlOf(core.config),
    '',
    'If you did not expect this invitation, you can ignore this email.',
  ].join('\n');
  await core.mailer.queue(tx, {
    companyId: employee.companyId,
    kind: 'employee_invitation',
    recipient: employee.email,
    subject: INVITATION_SUBJECT,
    body,
  });
}

export async function createEmployee(core: DomainDeps, p: Principal, input: NewEmployee) {
  const companyId = resolveWriteCompany(p, input.companyId);
  const { companyId: _company, teamName, sendInvitation, ...fields } = input;
  const result = await core.db.transaction(async (tx) => {
    const id = newId('emp');
    const teamId = (await teamIdFor(tx, p, companyId, teamName)) ?? null;
    const pairs = columnValues(fields);
    await uniqueEmail(input.email, () =>
      tx.query(sql`INSERT INTO employees (id, company_id, team_id, ${join(pairs.map(([column]) => raw(column)), ', ')})
        VALUES (${id}, ${companyId}, ${teamId}, ${join(pairs.map(([, value]) => sql`${value}`), ', ')})`),
    );
    const employee = await readBackInScope(tx, p, id);
    if (sendInvitation) await queueInvitation(core, tx, employee);
    return { ...employee, invitationQueued: sendInvitation };
  });
  // Delivery starts only after commit, so a rolled-back create never emails anyone.
  if (result.invitationQueued) core.mailer.kick();
  return result;
}

export async function updateEmployee(core: DomainDeps, p: Principal, id: string, changes: EmployeeChanges) {
  const { teamName, ...fields } = changes;
  const pairs = columnValues(fields);
  if (pairs.length === 0 && teamName === undefined) {
    throw badRequest('validation_failed', 'Invalid input to update_employee: send at least one field to change', [
      { field: '(body)', rule: 'min_properties', message: 'send at least one employee field to change' },
    ]);
  }
  return core.db.transaction(async (tx) => {
    const [current] = await tx.query<{ companyId: string; email: string; hasActiveLogin: boolean }>(sql`
      SELECT e.company_id AS "companyId", e.email, ${HAS_ACTIVE_LOGIN} AS "hasActiveLogin"
      FROM employees e WHERE e.id = ${id} AND ${employeeScope(p, p.companyIds)} FOR UPDATE OF e`);
    if (!current) throw notFound('Employee', id);
    const emailChanges = fields.email != null && fields.email.toLowerCase() !== current.email.toLowerCase();
    if (emailChanges && current.hasActiveLogin) {
      throw conflict('employee_has_active_login', 'The email of an employee with an active login cannot be changed', [
        { field: 'email', rule: 'immutable_with_login', message: 'this employee signs in with this email; it cannot be changed' },
      ]);
    }
    const teamId = await teamIdFor(tx, p, current.companyId, teamName);
    const sets = pairs.map(([column, value]) => sql`${raw(column)} = ${value}`);
    if (teamId !== undefined) sets.push(sql`team_id = ${teamId}`);
    await uniqueEmail(fields.email, () =>
      tx.query(sql`UPDATE employees SET ${join(sets, ', ')}, updated_at = now() WHERE id = ${id}`),
    );
    return readBackInScope(tx, p, id);
  });
}
