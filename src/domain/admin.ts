import { z } from 'zod';
import { mintApiKey } from '../access/api-keys.js';
import { ROLE_CEILING, ROLES, type Capability, type Role } from '../access/capabilities.js';
import type { Queryable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { sql } from '../store/sql.js';
import { badRequest, conflict, notFound } from '../kit/errors.js';

/** Operator actions behind `svc-server users …` and `svc-server keys …`. */

export async function createCompany(db: Queryable, name: string, id = newId('co')): Promise<string> {
  await db.query(sql`INSERT INTO companies (id, name) VALUES (${id}, ${name})`);
  return id;
}

export const NewUserSchema = z.object({
  email: z.email(),
  displayName: z.string().trim().min(1).max(200),
  role: z.enum(ROLES),
  companyIds: z.array(z.string().min(1)).min(1, 'a user belongs to at least one company'),
  teamIds: z.array(z.string()).default([]),
  regions: z.array(z.string().regex(/^[A-Z]{2}$/, 'must be an ISO country code')).default([]),
  employeeId: z.string().optional(),
  nonPersonal: z.boolean().default(false),
});

export async function createUser(db: Queryable, input: z.input<typeof NewUserSchema>): Promise<string> {
  const user = NewUserSchema.parse(input);
  if (user.role !== 'admin' && user.companyIds.length > 1) {
    throw badRequest('single_company_role', `Only admins may belong to several companies; a ${user.role} has one`);
  }
  if (user.role === 'employee' && !user.employeeId) {
    throw badRequest('employee_required', 'An employee user must be linked to an employee record (--employee)');
  }
  const [existing] = await db.query(sql`SELECT 1 FROM users WHERE lower(email) = lower(${user.email})`);
  if (existing) throw conflict('user_exists', `A user with email ${user.email} already exists`);
  const id = newId('usr');
  await db.query(sql`INSERT INTO users (id, email, display_name, role, employee_id, non_personal)
    VALUES (${id}, ${user.email}, ${user.displayName}, ${user.role}, ${user.employeeId ?? null}, ${user.nonPersonal})`);
  for (const companyId of user.companyIds) {
    await db.query(sql`INSERT INTO user_companies (user_id, company_id) VALUES (${id}, ${companyId})`);
  }
  for (const teamId of user.teamIds) {
    await db.query(sql`INSERT INTO manager_teams (user_id, team_id) VALUES (${id}, ${teamId})`);
  }
  for (const country of user.regions) {
    await db.query(sql`INSERT INTO manager_regions (user_id, country) VALUES (${id}, ${country})`);
  }
  return id;
}

async function userIdByEmail(db: Queryable, email: string): Promise<{ id: string; role: Role }> {
  const [user] = await db.query<{ id: string; role: Role }>(sql`SELECT id, role FROM users WHERE lower(email) = lower(${email})`);
  if (!user) throw notFound('User', email);
  return user;
}

/** Disabling a user stops every key bound to it on the next request (keys are checked live). */
export async function setUserDisabled(db: Queryable, email: string, disabled: boolean): Promise<void> {
  const { id } = await userIdByEmail(db, email);
  await db.query(sql`UPDATE users SET disabled_at = ${disabled ? sql`now()` : null} WHERE id = ${id}`);
}

export interface MintedKeyInfo {
  keyId: string;
  rawKey: string;
  userId: string;
  capabilities: Capability[];
}

/** Mints a key bound to a user; refuses capabilities beyond the user's role. The raw key is returned once. */
export async function mintKeyForUser(
  db: Queryable,
  email: string,
  requested: readonly Capability[] | 'all',
  name = 'API key',
): Promise<MintedKeyInfo> {
  const user = await userIdByEmail(db, email);
  const ceiling = new Set<Capability>(ROLE_CEILING[user.role]);
  // 'all' means everything the user's role allows, so scripts need not know the role.
  const capabilities = requested === 'all' ? [...ceiling] : requested;
  const beyond = capabilities.filter((c) => !ceiling.has(c));
  if (beyond.length > 0) {
    throw badRequest('capability_beyond_role', `A ${user.role} cannot hold ${beyond.join(', ')}`);
  }
  if (capabilities.length === 0) throw badRequest('no_capabilities', 'Choose at least one capability');
  const minted = mintApiKey();
  const unique = [...new Set(capabilities)];
  await db.query(sql`INSERT INTO api_keys (id, user_id, name, secret_hash, capabilities)
    VALUES (${minted.keyId}, ${user.id}, ${name}, ${minted.secretHash}, ${unique}::text[])`);
  return { keyId: minted.keyId, rawKey: minted.rawKey, userId: user.id, capabilities: unique };
}

export async function revokeKey(db: Queryable, keyId: string): Promise<void> {
  const rows = await db.query(sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${keyId} AND revoked_at IS NULL RETURNING id`);
  if (rows.length === 0) throw notFound('Active API key', keyId);
}

export async function setKeyCapabilities(db: Queryable, keyId: string, capabilities: readonly Capability[]): Promise<void> {
  const rows = await db.query(sql`UPDATE api_keys SET capabilities = ${[...capabilities]}::text[] WHERE id = ${keyId} RETURNING id`);
  if (rows.length === 0) throw notFound('API key', keyId);
}
