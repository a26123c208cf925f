import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import { ConfigError } from './config.js';
import { openDb, type Db } from './store/db.js';
import { migrate } from './store/migrations.js';
import { createAuthenticator, type Authenticator } from './access/authenticate.js';
import { createIdTokenVerifier } from './access/id-token.js';
import { createMailer, type Mailer } from './domain/mail.js';
import { defaultMappingsDir, loadMappings, MappingError, type Mappings } from './gateway/mappings.js';
import { createMetrics, type Metrics } from './gateway/metrics.js';

/** Everything an operation needs, built once per process from the parsed config. */
export interface Core {
  config: Config;
  db: Db;
  logger: Logger;
  auth: Authenticator;
  mailer: Mailer;
  /** 32-byte key for encrypting secrets at rest (device PINs). */
  secretKey: Buffer;
  /** Injectable clock: tests move time, production reads the wall clock. */
  now: () => Date;
  /** The v2 → v4 maps the gateway serves, read once at start. */
  mappings: Mappings;
  /** Prometheus registry of this core, served at /metrics. */
  metrics: Metrics;
  close(): Promise<void>;
}

export interface CoreOptions {
  logger?: Logger;
  now?: () => Date;
  /** PostgreSQL schema (tests isolate themselves per file). */
  schema?: string;
  /** Maps to serve instead of the package's (tests shrink the list ceiling). */
  mappings?: Mappings;
}

/** Log lines never carry credentials, whatever a caller sends. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.password',
  '*.pinCode',
  '*.apiKey',
  '*.rawKey',
];

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
}

function decodeKey(text: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError('SVC_SECRET_KEY must be 32 bytes, as 64 hex characters or base64');
  return key;
}

/** Embedded mode keeps its generated key beside the data; PostgreSQL deployments must share one. */
function resolveSecretKey(config: Config): Buffer {
  if (config.secretKey) return decodeKey(config.secretKey);
  if (config.databaseUrl) {
    throw new ConfigError('SVC_SECRET_KEY is required with DATABASE_URL, so that every instance decrypts the same data');
  }
  if (config.dataDir.startsWith('memory://')) return randomBytes(32);
  const file = join(config.dataDir, 'secret.key');
  if (existsSync(file)) return decodeKey(readFileSync(file, 'utf8').trim());
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex'), { mode: 0o600 });
  return key;
}

/** A wrong or missing map stops the start: the gateway would otherwise serve v2 wrongly. */
function loadPackageMappings(): Mappings {
  const dir = defaultMappingsDir();
  try {
    return loadMappings(dir);
  } catch (error) {
    if (error instanceof MappingError) throw new ConfigError(`The v2 maps in ${dir} are unusable: ${error.message}`);
    throw error;
  }
}

export async function createCore(config: Config, options: CoreOptions = {}): Promise<Core> {
  const mappings = options.mappings ?? loadPackageMappings();
  const logger = options.logger ?? createLogger(config);
  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema: options.schema });
  try {
    await migrate(db);
    const secretKey = resolveSecretKey(config);
    const idTokens =
      config.oidcIssuer && config.oidcAudience ? createIdTokenVerifier(config.oidcIssuer, config.oidcAudience) : undefined;
    const mailer = createMailer(db, config, logger);
    const metrics = createMetrics(mappings.sunset);
    return {
      config,
      db,
      logger,
      auth: createAuthenticator(db, idTokens, () => metrics.gateway.recordLegacyKeyRejected('rest')),
      mailer,
      secretKey,
      now: options.now ?? (() => new Date()),
      mappings,
      metrics,
      async close() {
        await mailer.stop();
        await db.close();
      },
    };
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}
