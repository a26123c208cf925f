import { z } from 'zod';

/**
 * Every setting of the server, parsed once at the edge (env + flags) and passed down.
 * Nothing below the entry point reads process.env.
 */
export const ConfigSchema = z.object({
  host: z.string().min(1).default('127.0.0.1')
    .describe('Interface to listen on.'),
  port: z.coerce.number().int().min(0).max(65535).default(3001)
    .describe('Port to listen on (the spec\'s `local` environment).'),
  publicBaseUrl: z.url().optional()
    .describe('The address clients use: links (invitation emails, OpenAPI), the OAuth issuer, and `{PUBLIC_BASE_URL}/mcp`, the MCP resource and token audience. Unset = `http://HOST:PORT`, and OAuth and MCP discovery follow the loopback name a client used (`localhost`, `127.0.0.1` or `[::1]` on `PORT`; see docs/oauth.md).'),
  databaseUrl: z.string().min(1).optional()
    .describe('PostgreSQL connection string; unset = the embedded PGlite store in `DATA_DIR`.'),
  dataDir: z.string().min(1).default('.data')
    .describe('PGlite data directory (made mode 0700 when new); `memory://` keeps everything in memory (tests).'),
  secretKey: z.string().min(1).optional()
    .describe('32 bytes (64 hex characters or base64) encrypting device PINs and sealed secrets. Unset with the embedded store = generated into `DATA_DIR/secret.key`; required with `DATABASE_URL`, so that every instance shares it.'),
  secretKeyPrevious: z.string().min(1).optional()
    .describe('During a key rotation, the key being replaced (same form as `SVC_SECRET_KEY`): it still opens what it sealed and nothing new is sealed with it; `svc-server secret-key rotate` re-seals everything under the new key (docs/operations.md).'),
  smtpUrl: z.string().min(1).optional()
    .describe('SMTP server for invitation mail, e.g. `smtp://user:pass@mail:587`; unset = mail stays in the `outbox` table.'),
  mailFrom: z.string().min(1).default('Device Lifecycle Service <no-reply@localhost>')
    .describe('Sender of invitation mail.'),
  oidcIssuer: z.url().optional()
    .describe('OpenID Connect issuer whose ID tokens are accepted as `Authorization: Bearer` on v4.'),
  oidcAudience: z.string().min(1).optional()
    .describe('Expected `aud` of those ID tokens (the client id registered at the issuer); required with `OIDC_ISSUER`.'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')
    .describe('pino log level.'),
  logBufferBytes: z.coerce.number().int().min(16_384).max(1_073_741_824).default(8_388_608)
    .describe('Log bytes held for a log reader that lags; lines beyond are dropped and counted in `svc_log_lines_dropped_total`.'),
  courierApiUrl: z.url({ protocol: /^https?$/ }).optional()
    .describe('Courier tracking API that `get_tracking` merges live events from (`GET {url}/v1/tracking/{carrier}/{trackingNumber}`); unset = stored events only.'),
  courierTimeoutMs: z.coerce.number().int().min(100).max(30_000).default(2000)
    .describe('Per-call courier timeout in milliseconds: past it a shipment answers its stored events with `courier.state: timeout`.'),
  legacyV2Upstream: z.url({ protocol: /^https?$/ }).optional()
    .describe('The legacy v2 API that v2 routes without a v4 successor are forwarded to; unset = they answer 501 `no_v4_successor`.'),
  legacyV2TimeoutMs: z.coerce.number().int().min(100).max(60_000).default(10_000)
    .describe('Timeout of a forwarded v2 call in milliseconds (502 when unreachable, 504 past it).'),
  shadowSampleRate: z.coerce.number().min(0).max(1).default(0)
    .describe('Share (0 to 1) of translated v2 GETs also sent to `LEGACY_V2_UPSTREAM` once the caller has its answer, to compare the two (the shadow check); needs `LEGACY_V2_UPSTREAM`; 0 = off. Writes are never mirrored.'),
  shadowTimeoutMs: z.coerce.number().int().min(100).max(60_000).default(5000)
    .describe('Timeout of one shadow call in milliseconds: past it the call counts as `legacy_slow`.'),
  shadowMaxInFlight: z.coerce.number().int().min(1).max(1000).default(8)
    .describe('Shadow calls in flight at most; a sample beyond them is dropped and counted.'),
  legacyUsageFlushMs: z.coerce.number().int().min(50).max(60_000).default(1000)
    .describe('How often, in milliseconds, the gateway writes its per-legacy-key call counts: a crash loses at most this interval\'s counts, a graceful stop none.'),
  mcpAllowedOrigins: z
    .union([z.string(), z.array(z.string())])
    .default([])
    .transform((value) => (Array.isArray(value) ? value : value.split(',')).map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(z.url({ protocol: /^https?$/ })))
    .describe('Browser origins (comma-separated URLs), besides loopback ones and `PUBLIC_BASE_URL`\'s, allowed to call `/mcp` and to read it and the discovery documents across origins (CORS).'),
  oauthAccessTokenTtl: z.coerce.number().int().min(60).max(86_400).default(3600)
    .describe('OAuth access-token lifetime in seconds (MCP clients refresh past it).'),
  oauthRefreshTokenTtl: z.coerce.number().int().min(3600).max(31_536_000).default(2_592_000)
    .describe('OAuth refresh-token lifetime in seconds (default 30 days); also how long an unused connection lasts.'),
  oauthCodeTtl: z.coerce.number().int().min(10).max(600).default(60)
    .describe('Authorization-code lifetime in seconds: codes are single use and short-lived.'),
  oauthRefreshGraceSeconds: z.coerce.number().int().min(0).max(300).default(30)
    .describe('Seconds a just-rotated refresh token, presented again by its client, gets the rotation\'s own answer (a client that refreshed twice at once); later it revokes the grant.'),
  oauthRegistrationsPerMinute: z.coerce.number().int().min(1).max(100_000).default(120)
    .describe('Open OAuth client registrations per address per minute: wide enough for a provider that registers on every connection from one address range.'),
  oauthRegistrationsPerDay: z.coerce.number().int().min(1).max(10_000_000).default(2000)
    .describe('Open OAuth client registrations per address per day; a client nobody authorizes expires after a day.'),
  mcpSessionsPerHour: z.coerce.number().int().min(1).max(1_000_000).default(120)
    .describe('MCP sessions one principal (user + credential) may open per hour; with the idle expiry this bounds its live sessions.'),
  sessionTtl: z.coerce.number().int().min(300).max(2_592_000).default(43_200)
    .describe('Lifetime of a sign-in to the application pages, in seconds (default 12 h).'),
  redisUrl: z.url({ protocol: /^rediss?$/ }).optional()
    .describe('`redis://[:password@]host:6379[/db]` or `rediss://…`: the Redis (6.2 or newer) every instance shares for rate limits and MCP sessions; unset = kept in this process (one instance only). A Redis down or too old (no `GETEX`) is logged, `/readyz` degraded and `svc_redis_up` 0.'),
  redisKeyPrefix: z.string().min(1).max(64).default('svc:')
    .describe('Prefix of every Redis key, so that several deployments (or test runs) can share one Redis.'),
  shutdownDrainMs: z.coerce.number().int().min(0).max(300_000).default(10_000)
    .describe('On SIGTERM, how long in milliseconds the instance keeps serving with `/readyz` answering 503 `draining` before it stops listening: at least what a balancer\'s health checks take to mark it down (interval × failures), with a margin.'),
  shutdownGraceMs: z.coerce.number().int().min(0).max(300_000).default(10_000)
    .describe('After the drain, the most the process takes to exit, in milliseconds: in-flight requests are cut when a fifth of it (at most 2 s) is left for closing the store and writing the last log lines.'),
  trustProxy: z
    .union([z.boolean(), z.string().min(1)])
    .default(false)
    .transform((value) => (value === 'true' ? true : value === 'false' ? false : value))
    .describe('Proxies whose `X-Forwarded-For` is believed, so that per-IP rate limits see the client behind a load balancer: `true` (any) or comma-separated addresses/CIDRs of the proxies; unset = none.'),
  metricsToken: z.string().min(32, 'must be at least 32 characters').optional()
    .describe('Bearer token (at least 32 characters) a scraper sends as `Authorization: Bearer <token>` to read `/metrics` from any address; unset = `/metrics` answers only callers connected directly from this machine (loopback, no forwarding header), 403 otherwise.'),
  metricsPort: z.coerce.number().int().min(1).max(65535).optional()
    .describe('Serves `/metrics` on a listener of its own, and not on the API port (which then answers 404); unset = `/metrics` on the API port.'),
  metricsHost: z.string().min(1).default('127.0.0.1')
    .describe('Interface of the `METRICS_PORT` listener.'),
});

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

/** Environment variable for each setting (docs/reference/configuration.md lists them with their descriptions). */
export const ENV_NAMES: Record<keyof Config, string> = {
  host: 'HOST',
  port: 'PORT',
  publicBaseUrl: 'PUBLIC_BASE_URL',
  databaseUrl: 'DATABASE_URL',
  dataDir: 'DATA_DIR',
  secretKey: 'SVC_SECRET_KEY',
  secretKeyPrevious: 'SVC_SECRET_KEY_PREVIOUS',
  smtpUrl: 'SMTP_URL',
  mailFrom: 'MAIL_FROM',
  oidcIssuer: 'OIDC_ISSUER',
  oidcAudience: 'OIDC_AUDIENCE',
  logLevel: 'LOG_LEVEL',
  logBufferBytes: 'LOG_BUFFER_BYTES',
  courierApiUrl: 'COURIER_API_URL',
  courierTimeoutMs: 'COURIER_TIMEOUT_MS',
  legacyV2Upstream: 'LEGACY_V2_UPSTREAM',
  legacyV2TimeoutMs: 'LEGACY_V2_TIMEOUT_MS',
  shadowSampleRate: 'SHADOW_SAMPLE_RATE',
  shadowTimeoutMs: 'SHADOW_TIMEOUT_MS',
  shadowMaxInFlight: 'SHADOW_MAX_IN_FLIGHT',
  legacyUsageFlushMs: 'LEGACY_USAGE_FLUSH_MS',
  mcpAllowedOrigins: 'MCP_ALLOWED_ORIGINS',
  oauthAccessTokenTtl: 'OAUTH_ACCESS_TOKEN_TTL',
  oauthRefreshTokenTtl: 'OAUTH_REFRESH_TOKEN_TTL',
  oauthCodeTtl: 'OAUTH_CODE_TTL',
  oauthRefreshGraceSeconds: 'OAUTH_REFRESH_GRACE_SECONDS',
  oauthRegistrationsPerMinute: 'OAUTH_REGISTRATIONS_PER_MINUTE',
  oauthRegistrationsPerDay: 'OAUTH_REGISTRATIONS_PER_DAY',
  mcpSessionsPerHour: 'MCP_SESSIONS_PER_HOUR',
  sessionTtl: 'SESSION_TTL',
  redisUrl: 'REDIS_URL',
  redisKeyPrefix: 'REDIS_KEY_PREFIX',
  shutdownDrainMs: 'SHUTDOWN_DRAIN_MS',
  shutdownGraceMs: 'SHUTDOWN_GRACE_MS',
  trustProxy: 'TRUST_PROXY',
  metricsToken: 'METRICS_TOKEN',
  metricsPort: 'METRICS_PORT',
  metricsHost: 'METRICS_HOST',
};

export class ConfigError extends Error {}

/** Flags win over the environment; empty env values count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Partial<Record<keyof Config, unknown>> = {}): Config {
  const raw: Record<string, unknown> = {};
  for (const [key, envName] of Object.entries(ENV_NAMES)) {
    const value = env[envName];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const [key, value] of Object.entries(flags)) {
    if (value !== undefined) raw[key] = value;
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? '');
      const envName = ENV_NAMES[key as keyof Config] ?? key;
      return `  ${envName}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  if (parsed.data.oidcIssuer && !parsed.data.oidcAudience) {
    throw new ConfigError('Invalid configuration:\n  OIDC_AUDIENCE: required when OIDC_ISSUER is set');
  }
  if (parsed.data.shadowSampleRate > 0 && !parsed.data.legacyV2Upstream) {
    throw new ConfigError('Invalid configuration:\n  SHADOW_SAMPLE_RATE: needs LEGACY_V2_UPSTREAM, the legacy v2 API to compare with');
  }
  return parsed.data;
}

/** `host:port` as a URL spells it: an IPv6 literal (HOST=::1) in brackets. */
export function hostAndPort(config: Pick<Config, 'host' | 'port'>): string {
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  return `${host}:${config.port}`;
}

export function baseUrlOf(config: Config): string {
  return config.publicBaseUrl ?? `http://${hostAndPort(config)}`;
}
