import { z } from 'zod';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import { CompanyIdField, envelopeOf, Id, Text, listEnvelope, PageFields, Timestamp, SearchQuery } from './common.js';

const teams = onDemand(() => import('../domain/teams.js'));

export const TeamName = Text(100, 'Team name, unique within the company (case-insensitive)');

const Team = z.object({
  id: z.string(),
  companyId: z.string(),
  name: z.string(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const teamOperations = [
  defineOperation({
    name: 'list_teams',
    cli: 'teams list',
    title: 'List teams',
    description: 'Lists the teams you can see, filtered by name with query.',
    details: 'Managers see only the teams they are scoped to.',
    capability: 'mcp:teams:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/teams',
    input: z.strictObject({ ...PageFields, companyId: CompanyIdField, query: SearchQuery.optional() }),
    output: listEnvelope('teams', Team),
    columns: { teams: columnsOf(Team, ['id', 'name', 'createdAt', 'updatedAt']) },
    handler: async ({ core, principal }, input) =>
      envelopeOf('teams', await (await teams()).listTeams(core.db, principal, input)),
  }),
  defineOperation({
    name: 'get_team',
    cli: 'teams get',
    title: 'Get a team',
    description: 'Reads one team by id, with its employee count.',
    capability: 'mcp:teams:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/teams/:id',
    input: z.strictObject({ id: Id.describe('Team id') }),
    output: Team.extend({ employeeCount: z.number().int() }),
    handler: async ({ core, principal }, input) => (await teams()).getTeam(core.db, principal, input.id),
  }),
  defineOperation({
    name: 'create_team',
    cli: 'teams create',
    title: 'Create a team',
    description: 'Creates a team. Fails with team_name_taken if the company already has a team of that name.',
    capability: 'mcp:teams:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/teams',
    successStatus: 201,
    input: z.strictObject({ name: TeamName, companyId: CompanyIdField }),
    output: Team,
    handler: async ({ core, principal }, input) => (await teams()).createTeam(core.db, principal, input),
  }),
  defineOperation({
    name: 'update_team',
    cli: 'teams update',
    title: 'Rename a team',
    description: 'Renames a team. Fails with team_name_taken if the company already has a team of that name.',
    capability: 'mcp:teams:write',
    readOnly: false,
    idempotent: true,
    // Overwrites what was there: destructive in MCP's sense (not only additive).
    destructive: true,
    method: 'PATCH',
    path: '/v4/teams/:id',
    input: z.strictObject({ id: Id.describe('Team id'), name: TeamName }),
    output: Team,
    handler: async ({ core, principal }, input) => (await teams()).renameTeam(core.db, principal, input.id, input.name),
  }),
];
