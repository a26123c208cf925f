import type { Credential, Principal } from '../access/principal.js';
import { maskedKey } from '../access/api-keys.js';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';

function describeCredential(credential: Credential) {
  switch (credential.kind) {
    case 'api_key':
      return { kind: credential.kind, keyId: credential.keyId, key: maskedKey(credential.keyId) };
    case 'id_token':
      return { kind: credential.kind, issuer: credential.issuer };
    case 'oauth':
      return { kind: credential.kind, clientId: credential.clientId };
  }
}

/** The caller as the service sees them: user, companies, scope and live capabilities. */
export async function describePrincipal(db: Queryable, p: Principal) {
  const [companies, teams] = await Promise.all([
    db.query<{ id: string; name: string }>(sql`SELECT id, name FROM companies WHERE id = ANY(${p.companyIds}::text[]) ORDER BY id`),
    db.query<{ id: string; name: string }>(sql`SELECT id, name FROM teams WHERE id = ANY(${p.teamIds}::text[]) ORDER BY id`),
  ]);
  return {
    user: { id: p.userId, email: p.email, displayName: p.displayName, role: p.role, employeeId: p.employeeId, nonPersonal: p.nonPersonal },
    companies,
    scope: { teams, regions: [...p.regions] },
    capabilities: [...p.capabilities].sort(),
    credential: describeCredential(p.credential),
  };
}
