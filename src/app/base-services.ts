import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../kit/config.js';
import { ConfigError } from '../kit/config.js';
import { openDb, type Db } from '../store/db.js';
import { openChangeFeed, type ChangeFeed } from '../store/change-feed.js';
import { loadMappingsToServe, type Mappings } from '../legacy/mappings.js';
import { createMetrics, type Metrics } from './metrics.js';
import { UsageRecorder } from '../legacy/legacy-key-usage.js';
import { openSharedState, type SharedState } from '../shared-state/index.js';
import { requestSerializer } from '../http/log-redaction.js';
import { createLogOutput, type LogOutput } from '../kit/log-output.js';

/**
 * What every serving process opens, the core and the gateway apart alike: the store and its change
 * feed, the log, the metrics, the v2 maps, the sealing keys, shared state and the v2 usage recorder.
 */
export interface BaseServices {
  config: Config;
  db: Db;
  logger: Logger;
  now: () => Date;
  /** 32-byte key sealing secrets at rest (pin-crypto.ts) and keying HMACs. */
  secretKey: Buffer;
  /** The key a rotation replaces (SVC_SECRET_KEY_PREVIOUS): opens what it sealed, seals nothing. */
  previousSecretKey?: Buffer;
  /** The v2 → v4 maps the gateway serves, read once at start. */
  mappings: Mappings;
  /** Prometheus registry of this process, served at /metrics. */
  metrics: Metrics;
  /** Database changes that invalidate caches, from this instance and every other. */
  changes: ChangeFeed;
  /** The gateway's per-legacy-key call counts, written in batches. */
  legacyUsage: Pick<UsageRecorder, 'record' | 'flush'>;
  /** Rate limits and session records every instance shares: Redis when REDIS_URL is set. */
  shared: SharedState;
  /**
   * Writes the v2 usage still counted, then stops `above` (what the caller built on these services),
   * then shared state, the change feed and the store.
   */
  close(above?: () => Promise<void>): Promise<void>;
  /** Writes the log lines still buffered for at most `withinMs`, then stops logging: the last step before exit. */
  endLogs(withinMs: number): Promise<void>;
}

export interface BaseOptions {
  logger?: Logger;
  now?: () => Date;
  /** PostgreSQL schema (tests isolate themselves per file). */
  schema?: string;
  /** The cluster a new PGlite store starts as, instead of an empty one (tests: migrated and seeded once per run). */
  pgliteCluster?: Blob;
  /** Maps to serve instead of the package's (tests shrink the list ceiling). */
  mappings?: Mappings;
}

const SECRET_HEADERS = ['["x-api-key"]', '.authorization', '.cookie', '["set-cookie"]'];
const SECRET_FIELDS = [
  'password', 'newPassword', 'currentPassword', 'pin', 'pinCode', 'apiKey', 'rawKey', 'legacyKey', 'secret',
  'token', 'access_token', 'refresh_token', 'id_token', 'client_secret', 'code_verifier',
];

/**
 * Log lines never carry credentials, whatever a caller sends: secret headers wherever a headers
 * object is logged, secret fields up to two levels down (an error carrying a request body).
 * Request URLs are logged with secret query values masked (requestSerializer).
 */
const REDACTED_PATHS = [
  ...SECRET_HEADERS.flatMap((header) => [`headers${header}`, `*.headers${header}`]),
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`, `*.*.${field}`]),
];

export function createLogger(config: Config, destination: DestinationStream): Logger {
  return pino(
    { level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, serializers: { req: requestSerializer } },
    destination,
  );
}

/** An injected logger writes where its caller decided; the process's own writes to stdout (see log-output.ts). */
function processLogger(config: Config, injected?: Logger): { logger: Logger; output?: LogOutput } {
  if (injected) return { logger: injected };
  const output = createLogOutput(config.logBufferBytes);
  return { logger: createLogger(config, output), output };
}

function decodeKey(text: string, name = 'SVC_SECRET_KEY'): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes, as 64 hex characters or base64`);
  return key;
}

function resolvePreviousKey(config: Config, current: Buffer): Buffer | undefined {
  if (!config.secretKeyPrevious) return undefined;
  const previous = decodeKey(config.secretKeyPrevious, 'SVC_SECRET_KEY_PREVIOUS');
  if (previous.equals(current)) throw new ConfigError('SVC_SECRET_KEY_PREVIOUS must differ from SVC_SECRET_KEY: it is the key being replaced');
  return previous;
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

/**
 * Opens the base services; `settleSchema` brings the store's schema to what this build needs (the
 * core migrates) or refuses it (the gateway apart only checks). Whatever opened is closed on a failure.
 */
export async function openBaseServices(config: Config, options: BaseOptions, settleSchema: (db: Db) => Promise<unknown>): Promise<BaseServices> {
  // The store opens first: its connections (PGlite: its compilation, off the main thread) proceed while the maps load.
  const opening = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema: options.schema, pgliteCluster: options.pgliteCluster });
  let mappings: Mappings;
  try {
    mappings = options.mappings ?? loadMappingsToServe();
  } catch (error) {
    await opening.then((db) => db.close()).catch(() => undefined);
    throw error;
  }
  const { logger, output: logOutput } = processLogger(config, options.logger);
  const db = await opening;
  let changes: ChangeFeed | undefined;
  try {
    changes = await openChangeFeed(db, logger);
    await settleSchema(db);
    const secretKey = resolveSecretKey(config);
    const previousSecretKey = resolvePreviousKey(config, secretKey);
    const now = options.now ?? (() => new Date());
    const metrics = createMetrics(mappings.sunset, now);
    if (logOutput) metrics.registry.registerMetric(logOutput.droppedLines);
    const feed = changes;
    const legacyUsage = new UsageRecorder(
      db,
      (error) => logger.warn({ err: error }, 'legacy key usage not written; kept for the next flush'),
      config.legacyUsageFlushMs,
    );
    const shared = await openSharedState(config, logger, metrics.registry, () => now().getTime());
    return {
      config,
      db,
      logger,
      now,
      secretKey,
      previousSecretKey,
      mappings,
      metrics,
      changes: feed,
      legacyUsage,
      shared,
      async close(above) {
        await legacyUsage.close();
        await above?.();
        await shared.close();
        await feed.close();
        await db.close();
      },
      endLogs: (withinMs) => logOutput?.end(withinMs) ?? Promise.resolve(),
    };
  } catch (error) {
    await changes?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw error;
  }
}
