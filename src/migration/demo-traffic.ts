import type { MigrationDeps } from './deps.js';

/*
 * Demo v2 traffic for the migration dashboard: which endpoints each demo legacy key calls, shared
 * by the seeded 30-day history and the live traffic script (scripts/v2-traffic.ts), so the
 * dashboard shows the same mix either way.
 */

/** A route label ("METHOD /path", as in mappings/v2-routes.yaml) and its share of a key's calls. */
export interface DemoCall {
  route: string;
  weight: number;
}

/** The live demo keys (in .data/demo-keys.json): their mix includes a route without a v4 successor. */
export const DEMO_TRAFFIC = {
  full: [
    { route: 'GET /employees', weight: 4 },
    { route: 'GET /employees/:id', weight: 3 },
    { route: 'GET /teams', weight: 2 },
    { route: 'GET /orders', weight: 2 },
    { route: 'GET /products', weight: 1 },
    { route: 'GET /catalogs', weight: 1 },
  ],
  addressOnly: [{ route: 'GET /employees/:id/deliveryAddress', weight: 1 }],
} satisfies Record<string, DemoCall[]>;

/** The retired integration: its last call was three weeks ago. */
const QUIET_TRAFFIC: DemoCall[] = [
  { route: 'GET /employees', weight: 3 },
  { route: 'GET /company', weight: 1 },
];

export const HISTORY_DAYS = 30;
const QUIET_SINCE_DAYS = 20;
const DAY_MS = 86_400_000;

/** A fixed wobble of ±10 % per day, so the seeded history looks lived-in yet is the same on every seed. */
const wobble = (daysAgo: number) => 1 + ((((daysAgo * 7919) % 13) / 12) - 0.5) / 5;

/** Calls on a day `daysAgo` before today, as the integrations migrate: fewer on weekends, decaying towards now. */
function dailyCalls(daysAgo: number, day: Date): { full: number; addressOnly: number; quiet: number } {
  const progress = (HISTORY_DAYS - 1 - daysAgo) / (HISTORY_DAYS - 1);
  const weekday = day.getUTCDay() % 6 === 0 ? 0.3 : 1;
  const shape = (calls: number) => Math.round(calls * weekday * wobble(daysAgo));
  return {
    // The full integration moves most reads to v4 over the month; the address sync only halves.
    full: shape(40 + 360 * Math.exp(-2.5 * progress)),
    addressOnly: shape(150 - 75 * progress),
    quiet: daysAgo >= QUIET_SINCE_DAYS ? shape(20 + 8 * (daysAgo - QUIET_SINCE_DAYS)) : 0,
  };
}

/** Splits a day's calls over a key's routes by weight; the remainder goes to the first route. */
function split(calls: number, mix: readonly DemoCall[]): number[] {
  const total = mix.reduce((sum, call) => sum + call.weight, 0);
  const shares = mix.map((call) => Math.floor((calls * call.weight) / total));
  shares[0]! += calls - shares.reduce((a, b) => a + b, 0);
  return shares;
}

/**
 * Thirty days of usage for the demo legacy keys, written as the gateway writes it: through the usage
 * recorder with past dates, then flushed. The quiet key stops three weeks ago, a candidate to disable.
 */
export async function seedDemoUsageHistory(core: MigrationDeps, keyIds: { full: string; addressOnly: string; quiet: string }): Promise<void> {
  const scopeOf = new Map(core.mappings.routes.map((route) => [`${route.method} ${route.path}`, route.scope]));
  const mixes = { full: DEMO_TRAFFIC.full, addressOnly: DEMO_TRAFFIC.addressOnly, quiet: QUIET_TRAFFIC };
  const now = core.now().getTime();
  for (let daysAgo = HISTORY_DAYS - 1; daysAgo >= 0; daysAgo--) {
    const at = new Date(now - daysAgo * DAY_MS);
    const calls = dailyCalls(daysAgo, at);
    for (const key of ['full', 'addressOnly', 'quiet'] as const) {
      const shares = split(calls[key], mixes[key]);
      mixes[key].forEach(({ route }, i) => {
        const scope = scopeOf.get(route);
        if (!scope) throw new Error(`demo traffic names ${route}, which mappings/v2-routes.yaml does not serve`);
        for (let n = 0; n < shares[i]!; n++) core.legacyUsage.record(keyIds[key], route, scope, at);
      });
    }
  }
  await core.legacyUsage.flush();
}
