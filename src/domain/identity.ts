import type { Principal } from '../access/principal.js';
import { maskedKey } from '../access/api-keys.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

/** The caller as the service sees them: user, companies, scope and live capabilities. */
export async function describePrincipal(db: Queryable, p: Principal) {
  const [companies, teams] = await Promise.all([
    db.query<{ id: string; name: string }>(sql`SELECT id, name FROM companies WHERE id = ANY(${p.companyIds}::text[]) ORDER BY id`),
    db.query<{ id: string; name: string }>(sql`SELECT id, name FROM teams WHERE id = ANY(${p.teamIds}::text[]) ORDER BY id`),
  ]);
  return {
    user: { id: p.userId, email: p.email, displayName: p.displayName, role: p.role, employeeId: p.employeeId },
    companies,
    scope: { teams, regions: p.regions },
    capabilities: [...p.capabilities].sort(),
    credential:
      p.credential.kind === 'api_key'
        ? { kind: p.credential.kind, keyId: p.credential.keyId, key: maskedKey(p.credential.keyId) }
        : { kind: p.credential.kind, issuer: p.credential.issuer },
  };
}
