import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../kit/config.js';
import type { Core } from './core.js';

/* The demo data set a first start or `svc-server seed --demo` loads, and how its keys are shown. */

export function demoKeysFile(config: Config): string | undefined {
  return config.databaseUrl || config.dataDir.startsWith('memory://') ? undefined : join(config.dataDir, 'demo-keys.json');
}

/**
 * Two v2 integrations of Acme: one with every scope v4 can serve (plus one it cannot), one address-only;
 * and a retired Globex export gone quiet. With 30 days of usage, so the migration dashboard has a story.
 */
async function seedDemoLegacyKeys(core: Core, companies: { acme: string; globex: string }): Promise<{ full: string; addressOnly: string }> {
  const [{ createLegacyKey }, { seedDemoUsageHistory }] = await Promise.all([
    import('../legacy/legacy-keys.js'),
    import('../migration/demo-traffic.js'),
  ]);
  const withSuccessor = core.mappings.scopes.filter((entry) => entry.capability !== undefined).map((entry) => entry.name);
  const register = (companyId: string, name: string, scopes: string[]) => createLegacyKey(core, core.mappings, { companyId, name, scopes });
  const full = await register(companies.acme, 'Demo v2 integration (full)', [...withSuccessor, 'api.catalogs.getAll']);
  const addressOnly = await register(companies.acme, 'Demo v2 address sync', [
    'api.employee.deliveryAddress.get',
    'api.employee.deliveryAddress.create',
    'api.employee.deliveryAddress.update',
  ]);
  const quiet = await register(companies.globex, 'Globex HR export (retired)', ['api.employees.getAll', 'api.company.get']);
  await seedDemoUsageHistory(core, { full: full.id, addressOnly: addressOnly.id, quiet: quiet.id });
  if (!full.rawKey || !addressOnly.rawKey) throw new Error('a generated legacy key is always returned');
  // The quiet key's raw key is not kept: nothing should call it again.
  return { full: full.rawKey, addressOnly: addressOnly.rawKey };
}

export async function seedDemoInto(core: Core) {
  const [{ seedDemo, DEMO_PASSWORD }, { seedDemoOrders }] = await Promise.all([
    import('../domain/demo.js'),
    import('../domain/orders/demo-orders.js'),
  ]);
  const demo = await seedDemo(core.db);
  // Orders in several states, with history and tracking, so every order operation shows real data.
  await seedDemoOrders(core, demo);
  const summary = {
    apiKeys: demo.apiKeys,
    legacyKeys: await seedDemoLegacyKeys(core, demo.companies),
    users: demo.emails,
    password: DEMO_PASSWORD,
    companies: demo.companies,
    keysFile: demoKeysFile(core.config),
  };
  if (summary.keysFile) writeFileSync(summary.keysFile, `${JSON.stringify(summary, null, 2)}\n`, { mode: 0o600 });
  return summary;
}

export function describeKeys(summary: {
  apiKeys: Record<string, string>;
  users: Record<string, string>;
  password: string;
  legacyKeys: Record<string, string>;
  keysFile?: string | undefined;
}): string {
  const lines = (keys: Record<string, string>) => Object.entries(keys).map(([who, key]) => `  ${who.padEnd(11)} ${key}`);
  return [
    'Demo API keys (shown once; send as X-API-KEY):',
    ...lines(summary.apiKeys),
    'Demo legacy v2 keys of Acme (for the /v2 gateway; refused on /v4):',
    ...lines(summary.legacyKeys),
    `Demo users sign in at /app/sign-in (and on OAuth consent) with the password "${summary.password}":`,
    `  ${Object.values(summary.users).join(', ')}`,
    ...(summary.keysFile ? [`Also written to ${summary.keysFile}`] : []),
  ].join('\n');
}
