import { z } from 'zod';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import { CompanyIdField, CountryCode, envelopeOf, Id, OptionalText, Phone, Text, listEnvelope, PageFields, Timestamp, SearchQuery } from './common.js';
import { TeamName } from './teams.js';

const employees = onDemand(() => import('../domain/employees.js'));

const DisplayName = Text(200, 'Full name as shown in the dashboard');

const WorkEmail = z.email().max(254).describe('Work email, the sign-in email; unique in the company (case-insensitive)');

/** The v4 name of the legacy secondaryEmail: "" clears it as null does. */
const PersonalEmail = z
  .union([z.email().max(254), z.literal(''), z.null()])
  .transform((v) => v || null)
  .optional()
  .describe('Private email address; null or "" clears it');

/** Fields settable on creation and by PATCH alike. */
const EmployeeFields = {
  personalEmail: PersonalEmail,
  country: CountryCode.nullable()
    .optional()
    .describe('Country code of the employee and their delivery address'),
  teamName: TeamName.nullable()
    .optional()
    .describe('Team by name (an admin naming a new one creates it; a manager names only their own); null leaves the team'),
  jobTitle: OptionalText('Job title'),
  department: OptionalText('Department'),
  division: OptionalText('Division'),
  taxId: OptionalText('Tax identifier'),
  addressOne: OptionalText('Delivery address: street and number'),
  city: OptionalText('Delivery address: city'),
  state: OptionalText('Delivery address: state or region'),
  zipCode: OptionalText('Delivery address: postal code'),
};

/** The v4 contract: these two address fields exist only after creation. */
const notAtCreation = (field: string) =>
  z
    .never({ error: `${field} cannot be set at creation: set it afterwards with PATCH /v4/employees/{id}` })
    .optional()
    .describe(`Not accepted at creation; set it with PATCH /v4/employees/{id}`);

const Employee = z.object({
  id: z.string(),
  companyId: z.string(),
  displayName: z.string(),
  email: z.string(),
  personalEmail: z.string().nullable(),
  country: z.string().nullable(),
  jobTitle: z.string().nullable(),
  department: z.string().nullable(),
  division: z.string().nullable(),
  taxId: z.string().nullable(),
  teamName: z.string().nullable(),
  addressOne: z.string().nullable(),
  addressTwo: z.string().nullable(),
  city: z.string().nullable(),
  state: z.string().nullable(),
  zipCode: z.string().nullable(),
  phone: z.string().nullable(),
  hasActiveLogin: z.boolean().describe('A user who can sign in is linked to this employee; their email is then fixed'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

/** The employee, their team and country first; address details and timestamps last. */
const EMPLOYEE_COLUMNS = columnsOf(Employee, ['id', 'displayName', 'email', 'teamName', 'country', 'jobTitle', 'department', 'hasActiveLogin']);

export const employeeOperations = [
  defineOperation({
    name: 'list_employees',
    cli: 'employees list',
    title: 'List employees',
    description: 'Lists the employees you can see, with their delivery addresses, filtered by the given fields.',
    details: 'Managers see their teams and regions; employees see themselves. `query` matches name or email.',
    capability: 'mcp:employees:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/employees',
    input: z.strictObject({
      ...PageFields,
      companyId: CompanyIdField,
      query: SearchQuery.optional().describe('Text found in the display name or email (case-insensitive)'),
      teamName: TeamName.optional().describe('Only employees of this team (case-insensitive)'),
      country: CountryCode.optional().describe('Only employees in this country'),
    }),
    output: listEnvelope('employees', Employee),
    columns: { employees: EMPLOYEE_COLUMNS },
    handler: async ({ core, principal }, input) =>
      envelopeOf('employees', await (await employees()).listEmployees(core.db, principal, input)),
  }),
  defineOperation({
    name: 'get_employee',
    cli: 'employees get',
    title: 'Get an employee',
    description: 'Reads one employee by id, with the delivery address.',
    capability: 'mcp:employees:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/employees/:id',
    input: z.strictObject({ id: Id.describe('Employee id') }),
    output: Employee,
    handler: async ({ core, principal }, input) => (await employees()).getEmployee(core.db, principal, input.id),
  }),
  defineOperation({
    name: 'list_available_countries',
    cli: 'employees countries',
    title: 'List countries with employees',
    description: 'Country codes of the employees you can see that have a delivery address: the countries to order for.',
    capability: 'mcp:employees:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/employees/countries',
    input: z.strictObject({ companyId: CompanyIdField }),
    output: z.object({ countries: z.array(z.string()) }),
    handler: async ({ core, principal }, input) => (await employees()).listAvailableCountries(core.db, principal, input.companyId),
  }),
  defineOperation({
    name: 'create_employee',
    cli: 'employees create',
    title: 'Create an employee',
    description: 'Creates an employee. Set addressTwo and phone afterwards with update_employee. Fails with employee_email_taken if the email is in use in the company.',
    details: '`displayName` and `email` are required. With `sendInvitation` true a dashboard invitation is emailed to the work email; the response says `invitationQueued` and never contains an invitation URL.',
    capability: 'mcp:employees:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/employees',
    successStatus: 201,
    input: z.strictObject({
      companyId: CompanyIdField,
      displayName: DisplayName,
      email: WorkEmail,
      ...EmployeeFields,
      addressTwo: notAtCreation('addressTwo'),
      phone: notAtCreation('phone'),
      sendInvitation: z.boolean().default(false).describe('Email a dashboard invitation to the work email'),
    }),
    output: Employee.extend({
      invitationQueued: z.boolean().describe('An invitation email was queued for delivery'),
    }),
    handler: async ({ core, principal }, input) => (await employees()).createEmployee(core, principal, input),
  }),
  defineOperation({
    name: 'update_employee',
    cli: 'employees update',
    title: 'Update an employee',
    description: 'Changes the given fields of an employee (at least one), delivery address included. Fails with employee_has_active_login when changing the email of an employee who signs in.',
    capability: 'mcp:employees:write',
    readOnly: false,
    idempotent: true,
    // Overwrites what was there: destructive in MCP's sense (not only additive).
    destructive: true,
    method: 'PATCH',
    path: '/v4/employees/:id',
    input: z.strictObject({
      id: Id.describe('Employee id'),
      displayName: DisplayName.optional(),
      email: WorkEmail.optional(),
      ...EmployeeFields,
      addressTwo: OptionalText('Delivery address: second line'),
      phone: Phone.nullable()
        .or(z.literal(''))
        .transform((v) => v || null)
        .optional()
        .describe('Delivery phone number; null or "" clears it'),
    }),
    output: Employee,
    handler: async ({ core, principal }, { id, ...changes }) => (await employees()).updateEmployee(core, principal, id, changes),
  }),
];
