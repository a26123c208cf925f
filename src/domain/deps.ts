import type { Logger } from 'pino';
import type { Config } from '../kit/config.js';
import type { Db } from '../store/db.js';
import type { Mailer } from './mail.js';

/**
 * What domain code and the operations above it are given: the bottom of the layering. The
 * composition root (src/app/core.ts) builds a Core that is also these, so no domain module can reach
 * OAuth, shared state, metrics or the gateway's maps.
 */
export interface DomainDeps {
  config: Config;
  db: Db;
  logger: Logger;
  mailer: Mailer;
  /** 32-byte key sealing secrets at rest (pin-crypto.ts) and keying HMACs. */
  secretKey: Buffer;
  /** The key a rotation replaces (SVC_SECRET_KEY_PREVIOUS): opens what it sealed, seals nothing. */
  previousSecretKey?: Buffer;
  /** Injectable clock: tests move time, production reads the wall clock. */
  now: () => Date;
}
