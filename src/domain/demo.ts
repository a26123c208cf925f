import { ROLE_CEILING } from '../access/capabilities.js';
import type { Db, Queryable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { sql } from '../store/sql.js';
import { createCompany, createUser, mintKeyForUser } from './admin.js';
import { ensureTeamByName } from './teams.js';
import { PRODUCT_TYPES, specScore, type DeviceSpecs, type ProductType } from './device-types.js';

/**
 * The demo data set behind `npm start` and the tests: two companies, an admin of both,
 * a manager scoped to one team and one region, employees, devices of every type,
 * catalog items and addresses.
 */
/** The demo users' password; public, like the demo data. Its scrypt hash is precomputed so seeding stays fast. */
export const DEMO_PASSWORD = 'demo-password';
const DEMO_PASSWORD_HASH = 'scrypt$32768$8$1$VSyc50RMCPOeCUXorSeAwA$lM6S9A65lU8_4PP2ZkZC1kcQc92IAe1TIEMvJq3FAx8';

export interface DemoData {
  companies: { acme: string; globex: string };
  teams: Record<'engineering' | 'sales' | 'operations' | 'research' | 'support', string>;
  employees: Record<'eve' | 'erik' | 'dana' | 'hans' | 'sofia' | 'noah' | 'greta' | 'sam', string>;
  users: { admin: string; manager: string; employee: string };
  emails: { admin: string; manager: string; employee: string };
  devices: Record<string, string>;
  apiKeys: { admin: string; manager: string; employee: string };
}

export async function isEmpty(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ n: number }>(sql`SELECT count(*) AS n FROM companies`);
  return (row?.n ?? 0) === 0;
}

interface EmployeeSeed {
  name: string;
  email: string;
  team?: string;
  country?: string;
  jobTitle?: string;
  address?: { addressOne: string; city: string; zipCode: string; state?: string };
}

async function insertEmployee(db: Queryable, companyId: string, teamIds: Record<string, string>, e: EmployeeSeed) {
  const id = newId('emp');
  await db.query(sql`INSERT INTO employees (id, company_id, display_name, email, country, job_title, department, team_id,
      address_one, city, state, zip_code)
    VALUES (${id}, ${companyId}, ${e.name}, ${e.email}, ${e.country ?? null}, ${e.jobTitle ?? null},
      ${e.team ?? null}, ${e.team ? teamIds[e.team] : null},
      ${e.address?.addressOne ?? null}, ${e.address?.city ?? null}, ${e.address?.state ?? null}, ${e.address?.zipCode ?? null})`);
  return id;
}

interface DeviceSeed {
  key: string;
  type: ProductType;
  manufacturer: string;
  model: string;
  specs: DeviceSpecs;
  status: 'Available' | 'Assigned' | 'In Repair' | 'Retired';
  condition?: 'New' | 'Good' | 'Fair' | 'Damaged';
  country: string;
  employee?: string;
  address?: string;
}

async function insertDevice(db: Queryable, companyId: string, serial: string, d: DeviceSeed, employeeId: string | null, addressId: string | null) {
  const id = newId('dev');
  await db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, specs,
      spec_score, condition, status, country, company_address_id, employee_id, assigned_at)
    VALUES (${id}, ${companyId}, ${serial}, ${d.type}, ${PRODUCT_TYPES[d.type]}, ${d.manufacturer}, ${d.model},
      ${JSON.stringify(d.specs)}::jsonb, ${specScore(d.specs)}, ${d.condition ?? 'Good'}, ${d.status}, ${d.country},
      ${addressId}, ${employeeId}, ${employeeId ? sql`now()` : null})`);
  return id;
}

const LAPTOP_PRO: DeviceSpecs = { cpu: 'Apple M3 Pro', ramGb: 36, storageGb: 1024, screenInches: 14, releaseYear: 2023 };
const LAPTOP_STD: DeviceSpecs = { cpu: 'Intel Core Ultra 7', ramGb: 32, storageGb: 512, screenInches: 14, releaseYear: 2024 };
const LAPTOP_BASIC: DeviceSpecs = { cpu: 'Intel Core i5-1345U', ramGb: 16, storageGb: 256, screenInches: 14, releaseYear: 2023 };

const CATALOG: Array<{ name: string; manufacturer: string; type: ProductType; specs: DeviceSpecs; price: number; availability: Array<[string, number, number]> }> = [
  { name: 'MacBook Pro 14 M3 Pro', manufacturer: 'Apple', type: 'Laptops', specs: LAPTOP_PRO, price: 2499, availability: [['US', 40, 3], ['DE', 12, 5], ['GB', 8, 6]] },
  { name: 'ThinkPad X1 Carbon Gen 12', manufacturer: 'Lenovo', type: 'Laptops', specs: LAPTOP_STD, price: 1899, availability: [['US', 25, 4], ['DE', 30, 2], ['FR', 10, 4], ['ES', 6, 7]] },
  { name: 'Latitude 5440', manufacturer: 'Dell', type: 'Laptops', specs: LAPTOP_BASIC, price: 1099, availability: [['US', 80, 2], ['DE', 0, 14], ['SE', 15, 5]] },
  { name: 'OptiPlex 7010', manufacturer: 'Dell', type: 'Desktops', specs: { cpu: 'Intel Core i7-13700', ramGb: 32, storageGb: 1024, releaseYear: 2023 }, price: 1199, availability: [['US', 20, 3], ['DE', 9, 5]] },
  { name: 'iPhone 15', manufacturer: 'Apple', type: 'Mobile', specs: { ramGb: 6, storageGb: 128, screenInches: 6.1, releaseYear: 2023 }, price: 899, availability: [['US', 60, 2], ['DE', 30, 3], ['FR', 25, 3], ['GB', 20, 3]] },
  { name: 'Galaxy S24', manufacturer: 'Samsung', type: 'Mobile', specs: { ramGb: 8, storageGb: 256, screenInches: 6.2, releaseYear: 2024 }, price: 849, availability: [['DE', 40, 2], ['ES', 15, 4], ['SE', 10, 4]] },
  { name: 'iPad Air 11', manufacturer: 'Apple', type: 'Tablet', specs: { ramGb: 8, storageGb: 128, screenInches: 11, releaseYear: 2024 }, price: 699, availability: [['US', 30, 3], ['DE', 10, 4]] },
  { name: 'UltraSharp U2723QE', manufacturer: 'Dell', type: 'Monitors', specs: { screenInches: 27, releaseYear: 2022 }, price: 579, availability: [['US', 50, 2], ['DE', 35, 3], ['FR', 12, 4]] },
  { name: 'MX Keys S', manufacturer: 'Logitech', type: 'Keyboards', specs: { releaseYear: 2023 }, price: 119, availability: [['US', 100, 2], ['DE', 80, 2]] },
  { name: 'MX Master 3S', manufacturer: 'Logitech', type: 'Mice', specs: { releaseYear: 2022 }, price: 99, availability: [['US', 100, 2], ['DE', 70, 2]] },
  { name: 'Jabra Evolve2 65', manufacturer: 'Jabra', type: 'Headsets', specs: { releaseYear: 2021 }, price: 249, availability: [['US', 30, 3], ['DE', 25, 3]] },
  { name: 'ThinkPad Thunderbolt 4 Dock', manufacturer: 'Lenovo', type: 'Docking Stations', specs: { releaseYear: 2022 }, price: 299, availability: [['US', 15, 4], ['DE', 20, 3]] },
  { name: 'USB-C 96W Power Adapter', manufacturer: 'Apple', type: 'Chargers', specs: { releaseYear: 2021 }, price: 79, availability: [['US', 200, 1], ['DE', 120, 2]] },
];

async function seedCatalog(db: Queryable) {
  for (const item of CATALOG) {
    const id = newId('cat');
    await db.query(sql`INSERT INTO catalog_items (id, name, manufacturer, product_type, category, specs, spec_score, price, currency)
      VALUES (${id}, ${item.name}, ${item.manufacturer}, ${item.type}, ${PRODUCT_TYPES[item.type]},
        ${JSON.stringify(item.specs)}::jsonb, ${specScore(item.specs)}, ${item.price}, 'USD')`);
    for (const [country, stock, leadTime] of item.availability) {
      await db.query(sql`INSERT INTO catalog_availability (item_id, country, stock, lead_time_days)
        VALUES (${id}, ${country}, ${stock}, ${leadTime})`);
    }
  }
}

async function insertAddress(db: Queryable, companyId: string, a: { alias: string; address: string; city: string; zipCode: string; country: string; contactName: string; contactEmail: string; phone: string }) {
  const id = newId('addr');
  await db.query(sql`INSERT INTO company_addresses (id, company_id, alias, address, city, zip_code, country, contact_name, contact_email, phone)
    VALUES (${id}, ${companyId}, ${a.alias}, ${a.address}, ${a.city}, ${a.zipCode}, ${a.country}, ${a.contactName}, ${a.contactEmail}, ${a.phone})`);
  return id;
}

export async function seedDemo(db: Db): Promise<DemoData> {
  return db.transaction(async (tx) => {
    const acme = await createCompany(tx, 'Acme Corp', 'co_acme');
    const globex = await createCompany(tx, 'Globex GmbH', 'co_globex');
    const teams = {
      engineering: (await ensureTeamByName(tx, acme, 'Engineering')).id,
      sales: (await ensureTeamByName(tx, acme, 'Sales')).id,
      operations: (await ensureTeamByName(tx, acme, 'Operations')).id,
      research: (await ensureTeamByName(tx, globex, 'Research')).id,
      support: (await ensureTeamByName(tx, globex, 'Support')).id,
    };
    const acmeTeams = { Engineering: teams.engineering, Sales: teams.sales, Operations: teams.operations };
    const globexTeams = { Research: teams.research, Support: teams.support };
    const employees = {
      eve: await insertEmployee(tx, acme, acmeTeams, { name: 'Eve Employee', email: 'eve@acme.example', team: 'Sales', country: 'US', jobTitle: 'Account Executive', address: { addressOne: '1 Market St', city: 'San Francisco', state: 'CA', zipCode: '94105' } }),
      erik: await insertEmployee(tx, acme, acmeTeams, { name: 'Erik Engineer', email: 'erik@acme.example', team: 'Engineering', country: 'SE', jobTitle: 'Backend Engineer', address: { addressOne: 'Drottninggatan 10', city: 'Stockholm', zipCode: '111 51' } }),
      dana: await insertEmployee(tx, acme, acmeTeams, { name: 'Dana Developer', email: 'dana@acme.example', team: 'Engineering', country: 'DE', jobTitle: 'Frontend Engineer', address: { addressOne: 'Torstraße 1', city: 'Berlin', zipCode: '10119' } }),
      hans: await insertEmployee(tx, acme, acmeTeams, { name: 'Hans Berger', email: 'hans@acme.example', team: 'Operations', country: 'DE', jobTitle: 'Logistics Lead', address: { addressOne: 'Marienplatz 8', city: 'München', zipCode: '80331' } }),
      sofia: await insertEmployee(tx, acme, acmeTeams, { name: 'Sofía Ventas', email: 'sofia@acme.example', team: 'Sales', country: 'ES', jobTitle: 'Sales Manager', address: { addressOne: 'Calle de Alcalá 50', city: 'Madrid', zipCode: '28014' } }),
      noah: await insertEmployee(tx, acme, acmeTeams, { name: 'Noah Newhire', email: 'noah@acme.example', country: 'US' }),
      greta: await insertEmployee(tx, globex, globexTeams, { name: 'Greta Globex', email: 'greta@globex.example', team: 'Research', country: 'DE', jobTitle: 'Scientist', address: { addressOne: 'Leopoldstraße 20', city: 'München', zipCode: '80802' } }),
      sam: await insertEmployee(tx, globex, globexTeams, { name: 'Sam Support', email: 'sam@globex.example', team: 'Support', country: 'GB', jobTitle: 'Support Engineer', address: { addressOne: '10 Downing St', city: 'London', zipCode: 'SW1A 2AA' } }),
    };
    const addresses = {
      acmeHq: await insertAddress(tx, acme, { alias: 'HQ San Francisco', address: '500 Howard St', city: 'San Francisco', zipCode: '94105', country: 'US', contactName: 'Olivia Ops', contactEmail: 'ops@acme.example', phone: '+1 415 555 0100' }),
      acmeBerlin: await insertAddress(tx, acme, { alias: 'Berlin Warehouse', address: 'Am Borsigturm 100', city: 'Berlin', zipCode: '13507', country: 'DE', contactName: 'Lena Lager', contactEmail: 'lager@acme.example', phone: '+49 30 5550 100' }),
      globexMunich: await insertAddress(tx, globex, { alias: 'Munich Office', address: 'Theresienstraße 1', city: 'München', zipCode: '80333', country: 'DE', contactName: 'Max Office', contactEmail: 'office@globex.example', phone: '+49 89 5550 200' }),
    };
    const deviceSeeds: DeviceSeed[] = [
      { key: 'eveLaptop', type: 'Laptops', manufacturer: 'Apple', model: 'MacBook Pro 14', specs: LAPTOP_PRO, status: 'Assigned', country: 'US', employee: 'eve' },
      { key: 'evePhone', type: 'Mobile', manufacturer: 'Apple', model: 'iPhone 15', specs: { ramGb: 6, storageGb: 128, releaseYear: 2023 }, status: 'Assigned', country: 'US', employee: 'eve' },
      { key: 'erikLaptop', type: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad X1 Carbon', specs: LAPTOP_STD, status: 'Assigned', country: 'SE', employee: 'erik' },
      { key: 'danaLaptop', type: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad X1 Carbon', specs: LAPTOP_STD, status: 'Assigned', country: 'DE', employee: 'dana' },
      { key: 'danaMonitor', type: 'Monitors', manufacturer: 'Dell', model: 'UltraSharp U2723QE', specs: { screenInches: 27, releaseYear: 2022 }, status: 'Assigned', country: 'DE', employee: 'dana' },
      { key: 'hansDesktop', type: 'Desktops', manufacturer: 'Dell', model: 'OptiPlex 7010', specs: { ramGb: 32, storageGb: 1024, releaseYear: 2023 }, status: 'Assigned', country: 'DE', employee: 'hans' },
      { key: 'stockLaptopDe1', type: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad X1 Carbon', specs: LAPTOP_STD, status: 'Available', condition: 'New', country: 'DE', address: 'acmeBerlin' },
      { key: 'stockLaptopDe2', type: 'Laptops', manufacturer: 'Dell', model: 'Latitude 5440', specs: LAPTOP_BASIC, status: 'Available', country: 'DE', address: 'acmeBerlin' },
      { key: 'stockLaptopUs1', type: 'Laptops', manufacturer: 'Apple', model: 'MacBook Pro 14', specs: LAPTOP_PRO, status: 'Available', condition: 'New', country: 'US', address: 'acmeHq' },
      { key: 'stockLaptopUs2', type: 'Laptops', manufacturer: 'Dell', model: 'Latitude 5440', specs: LAPTOP_BASIC, status: 'Available', country: 'US', address: 'acmeHq' },
      { key: 'stockTablet', type: 'Tablet', manufacturer: 'Apple', model: 'iPad Air 11', specs: { ramGb: 8, storageGb: 128, releaseYear: 2024 }, status: 'Available', condition: 'New', country: 'US', address: 'acmeHq' },
      { key: 'stockPhoneDe', type: 'Mobile', manufacturer: 'Samsung', model: 'Galaxy S24', specs: { ramGb: 8, storageGb: 256, releaseYear: 2024 }, status: 'Available', country: 'DE', address: 'acmeBerlin' },
      { key: 'stockMonitor', type: 'Monitors', manufacturer: 'Dell', model: 'UltraSharp U2723QE', specs: { screenInches: 27, releaseYear: 2022 }, status: 'Available', country: 'DE', address: 'acmeBerlin' },
      { key: 'stockKeyboard', type: 'Keyboards', manufacturer: 'Logitech', model: 'MX Keys S', specs: { releaseYear: 2023 }, status: 'Available', condition: 'New', country: 'US', address: 'acmeHq' },
      { key: 'stockMouse', type: 'Mice', manufacturer: 'Logitech', model: 'MX Master 3S', specs: { releaseYear: 2022 }, status: 'Available', country: 'US', address: 'acmeHq' },
      { key: 'stockHeadset', type: 'Headsets', manufacturer: 'Jabra', model: 'Evolve2 65', specs: { releaseYear: 2021 }, status: 'Available', country: 'DE', address: 'acmeBerlin' },
      { key: 'stockDock', type: 'Docking Stations', manufacturer: 'Lenovo', model: 'Thunderbolt 4 Dock', specs: { releaseYear: 2022 }, status: 'Available', country: 'US', address: 'acmeHq' },
      { key: 'stockCharger', type: 'Chargers', manufacturer: 'Apple', model: 'USB-C 96W Power Adapter', specs: { releaseYear: 2021 }, status: 'Available', condition: 'New', country: 'US', address: 'acmeHq' },
      { key: 'repairLaptop', type: 'Laptops', manufacturer: 'Dell', model: 'Latitude 5440', specs: LAPTOP_BASIC, status: 'In Repair', condition: 'Damaged', country: 'DE', address: 'acmeBerlin' },
      { key: 'retiredDesktop', type: 'Desktops', manufacturer: 'HP', model: 'EliteDesk 800 G4', specs: { ramGb: 8, storageGb: 256, releaseYear: 2018 }, status: 'Retired', condition: 'Fair', country: 'US', address: 'acmeHq' },
      { key: 'gretaLaptop', type: 'Laptops', manufacturer: 'Apple', model: 'MacBook Pro 14', specs: LAPTOP_PRO, status: 'Assigned', country: 'DE', employee: 'greta' },
      { key: 'globexStockLaptop', type: 'Laptops', manufacturer: 'Lenovo', model: 'ThinkPad X1 Carbon', specs: LAPTOP_STD, status: 'Available', country: 'DE', address: 'globexMunich' },
    ];
    const devices: Record<string, string> = {};
    let serial = 1000;
    for (const d of deviceSeeds) {
      const companyId = d.employee === 'greta' || d.address === 'globexMunich' ? globex : acme;
      const employeeId = d.employee ? employees[d.employee as keyof typeof employees] : null;
      const addressId = d.address ? addresses[d.address as keyof typeof addresses] : null;
      devices[d.key] = await insertDevice(tx, companyId, `SN-${companyId === acme ? 'AC' : 'GX'}-${serial++}`, d, employeeId, addressId);
    }
    await seedCatalog(tx);

    const emails = { admin: 'admin@demo.example', manager: 'manager@acme.example', employee: 'eve@acme.example' };
    const users = {
      admin: await createUser(tx, { email: emails.admin, displayName: 'Ada Admin', role: 'admin', companyIds: [acme, globex] }),
      manager: await createUser(tx, { email: emails.manager, displayName: 'Mia Manager', role: 'manager', companyIds: [acme], teamIds: [teams.engineering], regions: ['DE'] }),
      employee: await createUser(tx, { email: emails.employee, displayName: 'Eve Employee', role: 'employee', companyIds: [acme], employeeId: employees.eve }),
    };
    // Every demo user signs in to the pages (and so to OAuth consent) with the published demo password.
    await tx.query(sql`UPDATE users SET password_hash = ${DEMO_PASSWORD_HASH} WHERE id IN (${users.admin}, ${users.manager}, ${users.employee})`);
    const apiKeys = {
      admin: (await mintKeyForUser(tx, emails.admin, ROLE_CEILING.admin, 'demo admin key')).rawKey,
      manager: (await mintKeyForUser(tx, emails.manager, ROLE_CEILING.manager, 'demo manager key')).rawKey,
      employee: (await mintKeyForUser(tx, emails.employee, ROLE_CEILING.employee, 'demo employee key')).rawKey,
    };
    return { companies: { acme, globex }, teams, employees, users, emails, devices, apiKeys };
  });
}
