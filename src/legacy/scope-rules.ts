/*
 * How the v2 scope table is read, as pure functions over its entries: which entry rules a scope, and
 * the least v4 capability set an integration needs. No imports, so the `svc` CLI's offline audit and
 * the server (successor keys) share one definition without the CLI loading the server's maps.
 */

/** An entry of mappings/scopes.yaml, as far as these rules read it. */
export interface ScopeRuleLike {
  /** A v2 scope, or a prefix ending in `.*` covering every scope under it. */
  name: string;
  /** The v4 capability of the scope; undefined when it has no v4 successor. */
  capability?: string | undefined;
}

/** Does a rule (possibly a `prefix.*` wildcard) cover this v2 scope? */
export function ruleCovers(ruleName: string, scope: string): boolean {
  return ruleName === scope || (ruleName.endsWith('.*') && scope.startsWith(ruleName.slice(0, -1)));
}

/** The rule of a v2 scope: an exact rule wins over a wildcard. */
export function ruleFor<R extends ScopeRuleLike>(rules: readonly R[], scope: string): R | undefined {
  return rules.find((r) => r.name === scope) ?? rules.find((r) => ruleCovers(r.name, scope));
}

/** Recorded v2 calls of one key: a UTC day (YYYY-MM-DD), the scope the call used, how many. */
export interface ScopeUsage {
  day: string;
  scope: string;
  calls: number;
}

/** Calls made under a held scope (a wildcard counts the scopes under it) on or after the UTC day `since`. */
export function callsSince(usage: readonly ScopeUsage[], heldScope: string, since: string): number {
  return usage.filter((row) => row.day >= since && ruleCovers(heldScope, row.scope)).reduce((sum, row) => sum + row.calls, 0);
}

/**
 * The least v4 capability set for these v2 scopes, in the order the table lists them. With usage,
 * only the scopes called since `since` count: a scope granted but never called earns nothing.
 */
export function leastCapabilities<C extends string>(
  rules: readonly (ScopeRuleLike & { capability?: C | undefined })[],
  scopes: readonly string[],
  usage?: { rows: readonly ScopeUsage[]; since: string },
): C[] {
  const needed = new Set<C>();
  for (const scope of scopes) {
    const capability = ruleFor(rules, scope)?.capability;
    if (capability !== undefined && (!usage || callsSince(usage.rows, scope, usage.since) > 0)) needed.add(capability);
  }
  return [...new Set(rules.map((r) => r.capability))].filter((c): c is C => c !== undefined && needed.has(c));
}
