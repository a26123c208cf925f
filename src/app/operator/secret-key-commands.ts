import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ConfigError } from '../../kit/config.js';
import { decryptSecret, encryptSecret } from '../../domain/pin-crypto.js';
import { AppError } from '../../kit/errors.js';
import { idempotencyContext } from '../../http/idempotency.js';
import type { Db, Queryable } from '../../store/db.js';
import { and, raw, sql } from '../../store/sql.js';
import { configFrom, output, storeOptions, withCore, type StoreFlags } from './store-options.js';

/** Every column sealed under SVC_SECRET_KEY, with the row key and the context its seal is bound to. */
const SEALED_COLUMNS = [
  { table: 'devices', column: 'pin_ciphertext', key: ['id'], context: (row: Row) => row.id! },
  { table: 'legacy_keys', column: 'bridge_key_ciphertext', key: ['id'], context: (row: Row) => row.id! },
  { table: 'idempotency_keys', column: 'sealed_answer', key: ['user_id', 'key'], context: (row: Row) => idempotencyContext(row.user_id!, row.key!) },
] as const;

type Row = Record<string, string> & { sealed: string };

export interface Resealed {
  table: string;
  column: string;
  /** Sealed under the previous key, now under the current one. */
  resealed: number;
  /** Already under the current key (a rotation run again, or rows written by instances that have the new key). */
  current: number;
}

const opens = (key: Buffer, sealed: string, context: string) => {
  try {
    return decryptSecret(key, sealed, context);
  } catch {
    return undefined;
  }
};

/**
 * Seals every stored secret under `secretKey` that is sealed under `previousSecretKey`, in one transaction:
 * a secret that opens under neither stops it, and nothing is changed.
 */
export async function resealSecrets(db: Db, secretKey: Buffer, previousSecretKey: Buffer): Promise<Resealed[]> {
  return db.transaction(async (tx: Queryable) => {
    const report: Resealed[] = [];
    for (const { table, column, key, context } of SEALED_COLUMNS) {
      const keyColumns = raw(key.join(', '));
      // FOR UPDATE: an instance still serving waits for the commit rather than writing over a row resealed here.
      const rows = await tx.query<Row>(sql`SELECT ${keyColumns}, ${raw(column)} AS sealed FROM ${raw(table)}
        WHERE ${raw(column)} IS NOT NULL FOR UPDATE`);
      const counts: Resealed = { table, column, resealed: 0, current: 0 };
      for (const row of rows) {
        if (opens(secretKey, row.sealed, context(row)) !== undefined) {
          counts.current++;
          continue;
        }
        const plaintext = opens(previousSecretKey, row.sealed, context(row));
        if (plaintext === undefined) {
          const where = key.map((name) => `${name} ${row[name]}`).join(', ');
          throw new AppError(409, 'secret_unreadable', `${table}.${column} of the row with ${where} opens under neither SVC_SECRET_KEY nor SVC_SECRET_KEY_PREVIOUS; nothing was changed`);
        }
        await tx.query(sql`UPDATE ${raw(table)} SET ${raw(column)} = ${encryptSecret(secretKey, plaintext, context(row))}
          WHERE ${and(key.map((name) => sql`${raw(name)} = ${row[name]}`))}`);
        counts.resealed++;
      }
      report.push(counts);
    }
    return report;
  });
}

/** `secret-key rotate`: reseals what the store holds, then (embedded) keeps the new key beside the data. */
export function addSecretKeyCommands(program: Command): void {
  const secretKey = program.command('secret-key').description('rotate SVC_SECRET_KEY, the key sealing stored secrets');
  storeOptions(
    secretKey
      .command('rotate')
      .description('reseal stored secrets from SVC_SECRET_KEY_PREVIOUS to SVC_SECRET_KEY, in one transaction (embedded: server stopped)'),
  ).action(async (flags: StoreFlags) => {
    const config = configFrom(flags);
    // Both explicit: an embedded store would otherwise take its current key file as the new key.
    if (!config.secretKey || !config.secretKeyPrevious) {
      throw new ConfigError('A rotation needs SVC_SECRET_KEY set to the new key and SVC_SECRET_KEY_PREVIOUS to the key the secrets are sealed under now');
    }
    const report = await withCore(flags, (core) => resealSecrets(core.db, core.secretKey, core.previousSecretKey!));
    const embeddedKeyFile = !config.databaseUrl && !config.dataDir.startsWith('memory://') ? join(config.dataDir, 'secret.key') : undefined;
    // Written after the commit: from here the embedded store starts with the new key without SVC_SECRET_KEY.
    if (embeddedKeyFile && config.secretKey) writeFileSync(embeddedKeyFile, config.secretKey, { mode: 0o600 });
    output(
      flags,
      { tables: report, keyFile: embeddedKeyFile ?? null },
      [
        ...report.map((t) => `${t.table}.${t.column}: ${t.resealed} resealed, ${t.current} already under the new key`),
        embeddedKeyFile ? `${embeddedKeyFile} now holds the new key.` : 'Remove SVC_SECRET_KEY_PREVIOUS from every instance.',
      ].join('\n'),
    );
  });
}
