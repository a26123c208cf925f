import { z } from 'zod';

/**
 * Every setting of the server, parsed once at the edge (env + flags) and passed down.
 * Nothing below the entry point reads process.env.
 */
export const ConfigSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(3001),
  /** Public base URL used in links (emails, OpenAPI servers). Defaults to http://host:port. */
  publicBaseUrl: z.url().optional(),
  /** PostgreSQL connection string; when absent the embedded PGlite store is used. */
  databaseUrl: z.string().min(1).optional(),
  /** PGlite data directory; `memory://` keeps everything in memory (tests). */
  dataDir: z.string().min(1).default('.data'),
  /** 32-byte key (hex or base64) sealing secrets at rest and keying HMACs. Generated into dataDir when embedded. */
  secretKey: z.string().min(1).optional(),
  /** During a key rotation, the key being replaced: it still opens what it sealed; nothing new is sealed with it. */
  secretKeyPrevious: z.string().min(1).optional(),
  smtpUrl: z.string().min(1).optional(),
  mailFrom: z.string().min(1).default('Device Lifecycle Service <no-reply@localhost>'),
  /** OpenID Connect issuer whose ID tokens are accepted as `Authorization: Bearer` on v4. */
  oidcIssuer: z.url().optional(),
  /** Expected `aud` of those ID tokens (the client id registered at the issuer). */
  oidcAudience: z.string().min(1).optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Log bytes held for a log reader that lags; lines beyond are dropped and counted (svc_log_lines_dropped_total). */
  logBufferBytes: z.coerce.number().int().min(16_384).max(1_073_741_824).default(8_388_608),
  /** Courier tracking API that get_tracking merges live events from; unset = stored events only. */
  courierApiUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Per-call courier timeout: past it, tracking answers with the stored events alone. */
  courierTimeoutMs: z.coerce.number().int().min(100).max(30_000).default(2000),
  /** The legacy v2 API that v2 routes without a v4 successor are forwarded to; unset = they answer 501. */
  legacyV2Upstream: z.url({ protocol: /^https?$/ }).optional(),
  /** Per-call timeout of that forwarding: past it the v2 caller gets 504. */
  legacyV2TimeoutMs: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /**
   * Share (0 to 1) of translated v2 GETs also sent to LEGACY_V2_UPSTREAM once the caller has its
   * answer, to compare the two (the shadow check); 0 = off. Writes are never mirrored.
   */
  shadowSampleRate: z.coerce.number().min(0).max(1).default(0),
  /** Per-call timeout of a shadow call: past it the call counts as legacy_slow. */
  shadowTimeoutMs: z.coerce.number().int().min(100).max(60_000).default(5000),
  /** Shadow calls in flight at most; a sample beyond them is dropped and counted. */
  shadowMaxInFlight: z.coerce.number().int().min(1).max(1000).default(8),
  /** How often the gateway writes its per-key v2 call counts (a crash loses at most this much). */
  legacyUsageFlushMs: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** Browser origins, besides loopback ones and PUBLIC_BASE_URL's, allowed to call /mcp (comma-separated). */
  mcpAllowedOrigins: z
    .union([z.string(), z.array(z.string())])
    .default([])
    .transform((value) => (Array.isArray(value) ? value : value.split(',')).map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(z.url({ protocol: /^https?$/ }))),
  /** OAuth access-token lifetime in seconds (MCP clients refresh past it). */
  oauthAccessTokenTtl: z.coerce.number().int().min(60).max(86_400).default(3600),
  /** OAuth refresh-token lifetime in seconds; also how long an unused connection lasts. */
  oauthRefreshTokenTtl: z.coerce.number().int().min(3600).max(31_536_000).default(2_592_000),
  /** Authorization-code lifetime in seconds: codes are single use and short-lived. */
  oauthCodeTtl: z.coerce.number().int().min(10).max(600).default(60),
  /** Seconds a rotated refresh token still works, so a client that refreshed twice at once survives. */
  oauthRefreshGraceSeconds: z.coerce.number().int().min(0).max(300).default(30),
  /**
   * Open client registrations per address per minute and per day: wide enough for a provider that
   * registers on every connection from one address range; a client nobody authorizes expires in a day.
   */
  oauthRegistrationsPerMinute: z.coerce.number().int().min(1).max(100_000).default(120),
  oauthRegistrationsPerDay: z.coerce.number().int().min(1).max(10_000_000).default(2000),
  /** MCP sessions one principal (user + credential) may open per hour; with the idle TTL this bounds its live sessions. */
  mcpSessionsPerHour: z.coerce.number().int().min(1).max(1_000_000).default(120),
  /** Lifetime of a sign-in to the application pages, in seconds. */
  sessionTtl: z.coerce.number().int().min(300).max(2_592_000).default(43_200),
  /** Redis shared by every instance (rate limits, MCP sessions); unset = kept in this process. */
  redisUrl: z.url({ protocol: /^rediss?$/ }).optional(),
  /** Prefix of every Redis key, so that several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: z.string().min(1).max(64).default('svc:'),
  /**
   * On SIGTERM, how long the instance keeps serving with /readyz answering 503 before it stops listening:
   * at least what a balancer's health checks take to mark it down (interval × failures), with a margin.
   */
  shutdownDrainMs: z.coerce.number().int().min(0).max(300_000).default(10_000),
  /** On SIGTERM, how long in-flight requests may take to finish before their connections are cut. */
  shutdownGraceMs: z.coerce.number().int().min(0).max(300_000).default(10_000),
  /**
   * Proxies whose X-Forwarded-For is believed, so that per-IP rate limits see the client behind a
   * load balancer: "true" (any) or comma-separated addresses/CIDRs of the proxies. Unset = none.
   */
  trustProxy: z
    .union([z.boolean(), z.string().min(1)])
    .default(false)
    .transform((value) => (value === 'true' ? true : value === 'false' ? false : value)),
  /** Bearer token a scraper sends to read /metrics; unset = /metrics answers loopback callers only (or METRICS_PORT's). */
  metricsToken: z.string().min(32, 'must be at least 32 characters').optional(),
  /** A listener of its own for /metrics, which the API port then does not serve; unset = /metrics on the API port. */
  metricsPort: z.coerce.number().int().min(1).max(65535).optional(),
  /** Interface of the METRICS_PORT listener. */
  metricsHost: z.string().min(1).default('127.0.0.1'),
});

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

/** Environment variable for each setting; docs/configuration.md's table mirrors this. */
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

export function baseUrlOf(config: Config): string {
  return config.publicBaseUrl ?? `http://${config.host}:${config.port}`;
}
