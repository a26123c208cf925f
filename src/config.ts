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
  /** 32-byte key (hex or base64) for encrypting device PINs. Generated into dataDir when embedded. */
  secretKey: z.string().min(1).optional(),
  smtpUrl: z.string().min(1).optional(),
  mailFrom: z.string().min(1).default('Device Lifecycle Service <no-reply@localhost>'),
  /** OpenID Connect issuer whose ID tokens are accepted as `Authorization: Bearer` on v4. */
  oidcIssuer: z.url().optional(),
  /** Expected `aud` of those ID tokens (the client id registered at the issuer). */
  oidcAudience: z.string().min(1).optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Courier tracking API that get_tracking merges live events from; unset = stored events only. */
  courierApiUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Per-call courier timeout: past it, tracking answers with the stored events alone. */
  courierTimeoutMs: z.coerce.number().int().min(100).max(30_000).default(2000),
  /** The legacy v2 API that v2 routes without a v4 successor are forwarded to; unset = they answer 501. */
  legacyV2Upstream: z.url({ protocol: /^https?$/ }).optional(),
  /** Per-call timeout of that forwarding: past it the v2 caller gets 504. */
  legacyV2TimeoutMs: z.coerce.number().int().min(100).max(60_000).default(10_000),
});

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

/** Environment variable for each setting; the README's configuration table mirrors this. */
export const ENV_NAMES: Record<keyof Config, string> = {
  host: 'HOST',
  port: 'PORT',
  publicBaseUrl: 'PUBLIC_BASE_URL',
  databaseUrl: 'DATABASE_URL',
  dataDir: 'DATA_DIR',
  secretKey: 'SVC_SECRET_KEY',
  smtpUrl: 'SMTP_URL',
  mailFrom: 'MAIL_FROM',
  oidcIssuer: 'OIDC_ISSUER',
  oidcAudience: 'OIDC_AUDIENCE',
  logLevel: 'LOG_LEVEL',
  courierApiUrl: 'COURIER_API_URL',
  courierTimeoutMs: 'COURIER_TIMEOUT_MS',
  legacyV2Upstream: 'LEGACY_V2_UPSTREAM',
  legacyV2TimeoutMs: 'LEGACY_V2_TIMEOUT_MS',
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
  return parsed.data;
}

export function baseUrlOf(config: Config): string {
  return config.publicBaseUrl ?? `http://${config.host}:${config.port}`;
}
