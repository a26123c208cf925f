import { Counter, type Registry } from 'prom-client';
import type { Provider } from 'oidc-provider';

/*
 * The authorization server seen from its events: codes issued or refused at consent, token
 * requests by grant type. Labels are bounded sets (never a client, a user or a token).
 */

const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);

/** The shape of the Koa context and error the provider passes to its listeners, as far as read here. */
interface EventContext {
  oidc?: { route?: string; params?: { grant_type?: unknown } };
}
interface EventError {
  error?: unknown;
}

function counter(registry: Registry, name: string, help: string, labelNames: string[]): Counter {
  // One core may serve several apps (tests); a counter is registered once per registry.
  const existing = registry.getSingleMetric(name);
  return existing instanceof Counter ? existing : new Counter({ name, help, labelNames, registers: [registry] });
}

/** The grant_type label: the two this server grants, anything else (or unreadable) as "other". */
function grantTypeOf(ctx: unknown): string {
  const value = (ctx as EventContext).oidc?.params?.grant_type;
  return typeof value === 'string' && GRANT_TYPES.has(value) ? value : 'other';
}

export interface OAuthCounters {
  grants: Counter;
  tokenRequests: Counter;
}

/** svc_oauth_grants_total and svc_oauth_token_requests_total on `registry`: scraped from the start, before the provider loads. */
export function oauthCounters(registry: Registry): OAuthCounters {
  return {
    grants: counter(
      registry,
      'svc_oauth_grants_total',
      'Authorization requests answered: code issued, denied by the user at consent, or refused for another error',
      ['outcome'],
    ),
    tokenRequests: counter(
      registry,
      'svc_oauth_token_requests_total',
      'Token endpoint requests by grant type (authorization_code, refresh_token, other) and outcome (ok, error)',
      ['grant_type', 'outcome'],
    ),
  };
}

/** Counts the provider's outcomes on `counters`. */
export function observeOAuth(provider: Provider, { grants, tokenRequests }: OAuthCounters): void {
  provider.on('authorization.success', () => grants.inc({ outcome: 'issued' }));
  provider.on('authorization.error', (_ctx, error) => {
    grants.inc({ outcome: (error as EventError).error === 'access_denied' ? 'denied' : 'error' });
  });
  provider.on('grant.success', (ctx) => tokenRequests.inc({ grant_type: grantTypeOf(ctx), outcome: 'ok' }));
  provider.on('grant.error', (ctx) => tokenRequests.inc({ grant_type: grantTypeOf(ctx), outcome: 'error' }));
  // A fault of ours is reported as server_error instead of grant.error: still a failed token request.
  provider.on('server_error', (ctx) => {
    if ((ctx as EventContext).oidc?.route === 'token') tokenRequests.inc({ grant_type: grantTypeOf(ctx), outcome: 'error' });
  });
}
