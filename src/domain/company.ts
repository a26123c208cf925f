import type { Principal } from '../access/principal.js';
import { readCompanies, resolveWriteCompany } from '../access/principal.js';
import { companyScope, wholeCompanies } from '../access/scope.js';
import type { Queryable } from '../store/db.js';
import { pgErrorCode, UNIQUE_VIOLATION } from '../store/db.js';
import { newId } from '../store/ids.js';
import { paginate, type PageRequest } from '../store/paging.js';
import { and, containsText, sql } from '../store/sql.js';
import { conflict } from '../kit/errors.js';

export interface CompanyAddressFields {
  alias: string;
  address: string;
  city: string;
  zipCode: string;
  country: string;
  contactName: string;
  contactEmail: string;
  phone: string;
}

export interface CompanyAddressRecord extends CompanyAddressFields {
  id: string;
  companyId: string;
  createdAt: string;
}

const ADDRESS_COLUMNS = sql`a.id, a.company_id AS "companyId", a.alias, a.address, a.city, a.zip_code AS "zipCode",
  a.country, a.contact_name AS "contactName", a.contact_email AS "contactEmail", a.phone, a.created_at AS "createdAt"`;

const ALIAS_INDEX = 'company_addresses_alias_key';

export interface AddressFilters {
  companyId?: string | undefined;
  country?: string | undefined;
  query?: string | undefined;
}

export async function listCompanyAddresses(db: Queryable, p: Principal, input: PageRequest & AddressFilters) {
  const companies = readCompanies(p, input.companyId);
  const filters = [companyScope(companies, 'a')];
  if (input.country) filters.push(sql`a.country = ${input.country}`);
  if (input.query) {
    filters.push(containsText(input.query, [sql`a.alias`, sql`a.city`]));
  }
  return paginate<CompanyAddressRecord>(db, {
    columns: ADDRESS_COLUMNS,
    from: sql`company_addresses a`,
    where: and(filters),
    key: sql`a.id`,
    filters: { companyId: input.companyId, country: input.country, query: input.query },
    everyRowOf: wholeCompanies('company_addresses', companies, filters, true),
  }, input);
}

export async function createCompanyAddress(
  db: Queryable,
  p: Principal,
  input: CompanyAddressFields & { companyId?: string | undefined },
): Promise<CompanyAddressRecord> {
  const companyId = resolveWriteCompany(p, input.companyId);
  try {
    const [address] = await db.query<CompanyAddressRecord>(sql`
      INSERT INTO company_addresses AS a (id, company_id, alias, address, city, zip_code, country, contact_name, contact_email, phone)
      VALUES (${newId('addr')}, ${companyId}, ${input.alias}, ${input.address}, ${input.city}, ${input.zipCode},
        ${input.country}, ${input.contactName}, ${input.contactEmail}, ${input.phone})
      RETURNING ${ADDRESS_COLUMNS}`);
    return address!;
  } catch (error) {
    const constraint = (error as { constraint?: unknown } | null)?.constraint;
    if (pgErrorCode(error) === UNIQUE_VIOLATION && constraint === ALIAS_INDEX) {
      throw conflict('address_alias_taken', `An address with alias "${input.alias}" already exists in this company`, [
        { field: 'alias', rule: 'unique', message: 'address aliases are unique within a company (case-insensitive)' },
      ]);
    }
    throw error;
  }
}
