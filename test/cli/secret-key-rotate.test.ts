import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore, type Core } from '../../src/app/core.js';
import { createCompany } from '../../src/domain/admin.js';
import { decryptSecret, encryptSecret } from '../../src/domain/pin-crypto.js';
import { createLegacyKey, resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import { idempotencyContext } from '../../src/http/idempotency.js';
import { sql } from '../../src/store/sql.js';
import { backends, SVC_SERVER_STEPS_TIMEOUT_MS } from '../helpers/harness.js';
import { offlineStore, type OfflineStore } from '../helpers/offline-store.js';
import { runCommandSync } from '../helpers/server-process.js';

/*
 * SVC_SECRET_KEY rotation on both stores: a core given the new key and SVC_SECRET_KEY_PREVIOUS opens what
 * the old key sealed; `svc-server secret-key rotate` reseals every sealed column in one transaction (all or
 * nothing), after which the new key alone opens everything, and an embedded store keeps the new key.
 */

const OLD_KEY = randomBytes(32).toString('hex');
const NEW_KEY = randomBytes(32).toString('hex');
const hex = (key: string) => Buffer.from(key, 'hex');

describe.each(backends())('svc-server secret-key rotate [%s]', { timeout: SVC_SERVER_STEPS_TIMEOUT_MS }, (backend) => {
  let store: OfflineStore;
  let legacy: { id: string; rawKey: string; bridgeApiKey: string };
  const userId = 'usr_rotation';

  const withStore = async <T>(keys: { secretKey?: string; secretKeyPrevious?: string }, work: (core: Core) => Promise<T>): Promise<T> => {
    const core = await createCore(loadConfig({}, { ...store.config, ...keys, logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    try {
      return await work(core);
    } finally {
      await core.close();
    }
  };
  const rotate = (env: NodeJS.ProcessEnv) => runCommandSync(['secret-key', 'rotate', '--json'], { ...store.env, LOG_LEVEL: 'warn', ...env });
  const sealedAnswer = async (core: Core) =>
    (await core.db.query<{ sealed_answer: string }>(sql`SELECT sealed_answer FROM idempotency_keys WHERE user_id = ${userId}`))[0]!.sealed_answer;
  const sealedPin = async (core: Core) =>
    (await core.db.query<{ pin_ciphertext: string }>(sql`SELECT pin_ciphertext FROM devices WHERE id = 'dev_rotation'`))[0]!.pin_ciphertext;
  const sealedBridgeKey = async (core: Core) =>
    (await core.db.query<{ bridge_key_ciphertext: string }>(sql`SELECT bridge_key_ciphertext FROM legacy_keys WHERE id = ${legacy.id}`))[0]!.bridge_key_ciphertext;

  beforeAll(async () => {
    store = await offlineStore(backend, 'key_rotation');
    legacy = await withStore({ secretKey: OLD_KEY }, async (core) => {
      const companyId = await createCompany(core.db, 'Rotation GmbH');
      const created = await createLegacyKey(core, core.mappings, { companyId, name: 'Team sync', scopes: ['api.teams.getAll'] });
      const resolved = await resolveLegacyKey(core, created.rawKey!);
      if (resolved.status !== 'active' || !resolved.bridgeApiKey) throw new Error('the legacy key has no bridge key');
      // A device PIN and a stored idempotent answer, sealed as setPinCode and the REST layer seal them.
      await core.db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model, condition, status, pin_ciphertext)
        VALUES ('dev_rotation', ${companyId}, 'SN-ROT-1', 'laptop', 'computers', 'Lenovo', 'T14', 'new', 'in_stock', ${encryptSecret(core.secretKey, '0042', 'dev_rotation')})`);
      await core.db.query(sql`INSERT INTO idempotency_keys (user_id, key, fingerprint, status, sealed_answer, created_at, expires_at)
        VALUES (${userId}, 'k1', 'f', 201, ${encryptSecret(core.secretKey, '{"id":"ord_1"}', idempotencyContext(userId, 'k1'))}, now(), now() + interval '1 day')`);
      return { id: created.id, rawKey: created.rawKey!, bridgeApiKey: resolved.bridgeApiKey };
    });
  });
  afterAll(async () => store?.drop());

  it('serves secrets sealed under the previous key while SVC_SECRET_KEY_PREVIOUS is set', async () => {
    await withStore({ secretKey: NEW_KEY, secretKeyPrevious: OLD_KEY }, async (core) => {
      expect(await resolveLegacyKey(core, legacy.rawKey)).toMatchObject({ status: 'active', bridgeApiKey: legacy.bridgeApiKey });
    });
    await expect(withStore({ secretKey: NEW_KEY }, (core) => resolveLegacyKey(core, legacy.rawKey))).rejects.toThrow();
    await expect(withStore({ secretKey: OLD_KEY, secretKeyPrevious: OLD_KEY }, async () => {})).rejects.toThrow(/SVC_SECRET_KEY_PREVIOUS must differ/);
  });

  it('refuses to start without both keys, naming them', () => {
    const result = rotate({ SVC_SECRET_KEY: NEW_KEY });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('SVC_SECRET_KEY_PREVIOUS');
  });

  it('changes nothing when one secret opens under neither key', async () => {
    const stray = await withStore({ secretKey: OLD_KEY }, async (core) => {
      await core.db.query(sql`INSERT INTO idempotency_keys (user_id, key, fingerprint, status, sealed_answer, created_at, expires_at)
        VALUES (${userId}, 'stray', 'f', 201, ${encryptSecret(randomBytes(32), '{}', idempotencyContext(userId, 'stray'))}, now(), now() + interval '1 day')`);
      return { answer: await sealedAnswer(core), bridge: await sealedBridgeKey(core), pin: await sealedPin(core) };
    });
    const result = rotate({ SVC_SECRET_KEY: NEW_KEY, SVC_SECRET_KEY_PREVIOUS: OLD_KEY });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('secret_unreadable');
    expect(result.stderr).toContain('idempotency_keys.sealed_answer of the row with user_id usr_rotation, key stray');
    await withStore({ secretKey: OLD_KEY }, async (core) => {
      expect({ answer: await sealedAnswer(core), bridge: await sealedBridgeKey(core), pin: await sealedPin(core) }).toEqual(stray);
      await core.db.query(sql`DELETE FROM idempotency_keys WHERE key = 'stray'`);
    });
  });

  it('reseals every secret under the new key, and a second run finds nothing left to do', async () => {
    const first = rotate({ SVC_SECRET_KEY: NEW_KEY, SVC_SECRET_KEY_PREVIOUS: OLD_KEY });
    expect(first.status, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.tables).toEqual([
      { table: 'devices', column: 'pin_ciphertext', resealed: 1, current: 0 },
      { table: 'legacy_keys', column: 'bridge_key_ciphertext', resealed: 1, current: 0 },
      { table: 'idempotency_keys', column: 'sealed_answer', resealed: 1, current: 0 },
    ]);

    // The new key alone opens everything; on the embedded store it is the data directory's key from now on.
    const embedded = backend === 'pglite';
    expect(report.keyFile).toBe(embedded ? join(store.config.dataDir, 'secret.key') : null);
    if (embedded) expect(readFileSync(report.keyFile, 'utf8')).toBe(NEW_KEY);
    await withStore(embedded ? {} : { secretKey: NEW_KEY }, async (core) => {
      expect(core.secretKey.equals(hex(NEW_KEY))).toBe(true);
      expect(await resolveLegacyKey(core, legacy.rawKey)).toMatchObject({ status: 'active', bridgeApiKey: legacy.bridgeApiKey });
      expect(decryptSecret(core.secretKey, await sealedPin(core), 'dev_rotation')).toBe('0042');
      expect(decryptSecret(core.secretKey, await sealedAnswer(core), idempotencyContext(userId, 'k1'))).toBe('{"id":"ord_1"}');
    });

    const again = rotate({ SVC_SECRET_KEY: NEW_KEY, SVC_SECRET_KEY_PREVIOUS: OLD_KEY });
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).tables.map((t: { resealed: number; current: number }) => [t.resealed, t.current])).toEqual([[0, 1], [0, 1], [0, 1]]);
  });
});
