import type { LegacyReadDeps } from '../legacy/legacy-keys.js';
import { sql } from '../store/sql.js';
import { buildMigrationPlan, type MigrationPlan } from './migration-plan.js';
import { GUIDE_PATH } from './pages/migration-guide.js';

/*
 * What the owner of an integration reads with nothing but its legacy key (GET /v2/migration-plan):
 * that key's own plan, stage, next step and the brownouts ahead, and who can mint its successor v4
 * key. Never another key's data: the key read is the one presented.
 */

interface OwnerPlan extends MigrationPlan {
  ask: {
    /**
     * Who mints the successor key: the names of the company's admins. Not their e-mail addresses: a v2
     * key is often held by a vendor, and a leaked one must not hand out a list of admin addresses.
     */
    admins: string[];
    how: string;
  };
}

export async function buildOwnerPlan(core: LegacyReadDeps, key: { legacyKeyId: string; companyId: string }): Promise<OwnerPlan> {
  const plan = await buildMigrationPlan(core, [key.companyId], key.legacyKeyId);
  // People only: an integration's own non-personal users administer nothing.
  const admins = await core.db.query<{ name: string }>(sql`
    SELECT u.display_name AS name FROM users u JOIN user_companies uc ON uc.user_id = u.id
    WHERE uc.company_id = ${key.companyId} AND u.role = 'admin' AND NOT u.non_personal AND u.disabled_at IS NULL
    ORDER BY lower(u.display_name)`);
  const mint = plan.steps.find((step) => step.id === 'mint_successor');
  return {
    ...plan,
    ask: {
      admins: admins.map((admin) => admin.name),
      how:
        `An admin of your company mints the successor v4 key on the migration dashboard (/app/migration) or with ` +
        `\`${mint?.command ?? `svc legacy-keys mint-successor ${plan.key.id}`}\`; the key is shown to them once, and they hand it to you. ` +
        `Then move each call as the guide says (${GUIDE_PATH}).`,
    },
  };
}
