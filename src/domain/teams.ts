import type { Principal } from '../access/principal.js';
import { readCompanies, resolveWriteCompany } from '../access/principal.js';
import { teamScope, wholeCompanies } from '../access/scope.js';
import type { Queryable } from '../store/db.js';
import { pgErrorCode, UNIQUE_VIOLATION } from '../store/db.js';
import { newId } from '../store/ids.js';
import { paginate, type PageRequest } from '../store/paging.js';
import { and, containsText, sql } from '../store/sql.js';
import { conflict, notFound } from '../kit/errors.js';

export interface TeamRecord {
  id: string;
  companyId: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

const TEAM_COLUMNS = sql`t.id, t.company_id AS "companyId", t.name, t.created_at AS "createdAt", t.updated_at AS "updatedAt"`;

function duplicateName(name: string) {
  return conflict('team_name_taken', `A team named "${name}" already exists in this company`, [
    { field: 'name', rule: 'unique', message: 'team names are unique within a company' },
  ]);
}

/** Maps the unique index on (company, lower(name)) to a 409; other failures pass through. */
async function uniqueName<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (pgErrorCode(error) === UNIQUE_VIOLATION) throw duplicateName(name);
    throw error;
  }
}

export async function listTeams(db: Queryable, p: Principal, input: PageRequest & { companyId?: string | undefined; query?: string | undefined }) {
  const companies = readCompanies(p, input.companyId);
  const filters = [teamScope(p, companies)];
  if (input.query) filters.push(containsText(input.query, [sql`t.name`]));
  return paginate<TeamRecord>(db, {
    columns: TEAM_COLUMNS,
    from: sql`teams t`,
    where: and(filters),
    key: sql`t.id`,
    filters: { companyId: input.companyId, query: input.query },
    everyRowOf: wholeCompanies('teams', companies, filters, p.role === 'admin'),
  }, input);
}

export async function getTeam(db: Queryable, p: Principal, id: string) {
  const [team] = await db.query<TeamRecord & { employeeCount: number }>(sql`
    SELECT ${TEAM_COLUMNS}, (SELECT count(*) FROM employees e WHERE e.team_id = t.id) AS "employeeCount"
    FROM teams t WHERE t.id = ${id} AND ${teamScope(p, p.companyIds)}`);
  if (!team) throw notFound('Team', id);
  return team;
}

export async function createTeam(db: Queryable, p: Principal, input: { name: string; companyId?: string | undefined }) {
  const companyId = resolveWriteCompany(p, input.companyId);
  return uniqueName(input.name, async () => {
    const [team] = await db.query<TeamRecord>(sql`
      INSERT INTO teams AS t (id, company_id, name) VALUES (${newId('team')}, ${companyId}, ${input.name})
      RETURNING ${TEAM_COLUMNS}`);
    return team!;
  });
}

export async function renameTeam(db: Queryable, p: Principal, id: string, name: string) {
  return uniqueName(name, async () => {
    const [team] = await db.query<TeamRecord>(sql`
      UPDATE teams t SET name = ${name}, updated_at = now()
      WHERE t.id = ${id} AND ${teamScope(p, p.companyIds)}
      RETURNING ${TEAM_COLUMNS}`);
    if (!team) throw notFound('Team', id);
    return team;
  });
}

/** Finds a team by name in a company, creating it when missing (employees address teams by name). */
export async function ensureTeamByName(db: Queryable, companyId: string, name: string): Promise<{ id: string; created: boolean }> {
  const inserted = await db.query<{ id: string }>(sql`
    INSERT INTO teams (id, company_id, name) VALUES (${newId('team')}, ${companyId}, ${name})
    ON CONFLICT (company_id, lower(name)) DO NOTHING RETURNING id`);
  if (inserted[0]) return { id: inserted[0].id, created: true };
  const [existing] = await db.query<{ id: string }>(sql`
    SELECT id FROM teams WHERE company_id = ${companyId} AND lower(name) = lower(${name})`);
  return { id: existing!.id, created: false };
}
