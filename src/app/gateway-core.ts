import { ConfigError, type Config } from '../kit/config.js';
import type { Db } from '../store/db.js';
import { MIGRATIONS, pendingMigrations } from '../store/migrations.js';
import { sql } from '../store/sql.js';
import { serviceAddresses } from '../oauth/addresses.js';
import type { GatewayDeps } from '../gateway/deps.js';
import type { Stoppable } from '../http/listen.js';
import { openBaseServices, type BaseOptions } from './base-services.js';

/** The services of the gateway apart: GatewayDeps, and a way to stop them. */
export type GatewayCore = GatewayDeps & Stoppable;

/**
 * Refuses a store the core has not migrated to this build's schema: the gateway never migrates, so
 * that one place (the core) changes the schema. A newer schema is served: rolling upgrades move the core first.
 */
async function requireMigrated(db: Db): Promise<void> {
  const pending = await pendingMigrations(db);
  if (pending.length === 0) return;
  // Named, so that a DATABASE_URL pointing elsewhere than the core's is seen for what it is.
  const [where] = await db.query<{ database: string; schema: string | null }>(sql`SELECT current_database() AS database, current_schema() AS schema`);
  const place = `database ${where!.database}, schema ${where!.schema ?? '(none on the search_path)'}`;
  if (pending.length === MIGRATIONS.length) {
    throw new ConfigError(
      `No service schema in ${place}: is DATABASE_URL the one the core uses? The gateway never migrates: start the core (svc-server serve, or svc-server migrate) on that database first, then the gateway`,
    );
  }
  throw new ConfigError(
    `${place} lacks ${pending.length} schema migration(s) this gateway needs (${pending[0]}${pending.length > 1 ? ` to ${pending.at(-1)}` : ''}), ` +
      'and the gateway never migrates: start or upgrade the core (svc-server serve, or svc-server migrate) on this database first, then the gateway',
  );
}

/**
 * What `svc-server gateway` runs on: the base services (store, change feed, log, metrics, maps,
 * sealing keys, shared state, usage recorder) and the issuer a refused MCP call is pointed to. No
 * mailer, authenticator, OAuth server or first-use recorder: v4 is the core's, reached over HTTP.
 */
export async function createGatewayCore(config: Config, options: BaseOptions = {}): Promise<GatewayCore> {
  const oauth = serviceAddresses(config, (issuer) => ({ issuer }));
  return { ...(await openBaseServices(config, options, requireMigrated)), oauth };
}
