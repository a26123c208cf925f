import { z } from 'zod';
import { columnsOf, defineOperation, onDemand } from './operation.js';
import { CompanyIdField, CountryCode, Phone, Text, envelopeOf, listEnvelope, PageFields, Timestamp, SearchQuery } from './common.js';

const company = onDemand(() => import('../domain/company.js'));

const NewAddress = {
  alias: Text(100, 'Short name of the address, unique within the company (case-insensitive)'),
  address: Text(200, 'Street and number'),
  city: Text(100, 'City'),
  zipCode: Text(20, 'Postal code'),
  country: CountryCode.describe('ISO 3166-1 alpha-2 country code'),
  contactName: Text(200, 'Person who receives or hands over devices at this address'),
  contactEmail: z.email().max(254).describe('Email of the contact person'),
  phone: Phone,
};

const CompanyAddress = z.object({
  id: z.string(),
  companyId: z.string(),
  alias: z.string(),
  address: z.string(),
  city: z.string(),
  zipCode: z.string(),
  country: z.string(),
  contactName: z.string(),
  contactEmail: z.string(),
  phone: z.string(),
  createdAt: Timestamp,
});

export const companyOperations = [
  defineOperation({
    name: 'list_company_addresses',
    cli: 'company addresses list',
    title: 'List company addresses',
    description: 'Lists the office and warehouse addresses of your companies that devices ship to or are collected from.',
    details: 'Filter by `country`, or by `query` matching alias or city.',
    capability: 'mcp:company:read',
    readOnly: true,
    method: 'GET',
    path: '/v4/company/addresses',
    input: z.strictObject({
      ...PageFields,
      companyId: CompanyIdField,
      country: CountryCode.optional().describe('Only addresses in this country (ISO 3166-1 alpha-2)'),
      query: SearchQuery.optional().describe('Case-insensitive text matched against alias and city'),
    }),
    output: listEnvelope('addresses', CompanyAddress),
    columns: { addresses: columnsOf(CompanyAddress, ['id', 'alias', 'city', 'country', 'address', 'zipCode', 'contactName', 'contactEmail', 'phone']) },
    handler: async ({ core, principal }, input) =>
      envelopeOf('addresses', await (await company()).listCompanyAddresses(core.db, principal, input)),
  }),
  defineOperation({
    name: 'create_company_address',
    cli: 'company addresses create',
    title: 'Save a company address',
    description: 'Saves an office or warehouse address for shipping and collection. Fails with address_alias_taken if the company has the alias already.',
    details: 'All eight fields are required; the alias is unique within the company (409 address_alias_taken).',
    capability: 'mcp:company:write',
    readOnly: false,
    method: 'POST',
    path: '/v4/company/addresses',
    successStatus: 201,
    input: z.strictObject({ ...NewAddress, companyId: CompanyIdField }),
    output: CompanyAddress,
    handler: async ({ core, principal }, input) => (await company()).createCompanyAddress(core.db, principal, input),
  }),
];
