import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore, type Core } from '../../src/app/core.js';
import { createCompany } from '../../src/domain/admin.js';
import { recentCutoverEvents } from '../../src/legacy/cutover-events.js';
import { createLegacyKey, dedicatedUserEmail, listLegacyKeys } from '../../src/legacy/legacy-keys.js';
import { backends, SVC_SERVER_STEPS_TIMEOUT_MS, TEST_SECRET_KEY } from '../helpers/harness.js';
import { offlineStore, type OfflineStore } from '../helpers/offline-store.js';
import { runCommandSync } from '../helpers/server-process.js';

/*
 * The operator's offline mints for a legacy key's integration, with the server stopped, on both
 * stores: `svc-server legacy-keys mint-successor`, and `svc-server keys mint` for a key's successor
 * user, take the API's path, so what they mint is linked to the legacy key, its stage moves and
 * the event is stored as the operator's.
 */

describe.each(backends())('svc-server mints of a successor key, offline [%s]', { timeout: SVC_SERVER_STEPS_TIMEOUT_MS }, (backend) => {
  let store: OfflineStore;
  let companyId: string;
  let first: { id: string };
  let second: { id: string };

  /** An in-process core on the store, closed before the next command opens it. */
  const withStore = async <T>(work: (core: Core) => Promise<T>): Promise<T> => {
    const core = await createCore(loadConfig({}, { ...store.config, secretKey: TEST_SECRET_KEY, logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    try {
      return await work(core);
    } finally {
      await core.close();
    }
  };
  const svcServer = (...args: string[]) => {
    const result = runCommandSync([...args, '--json'], { ...store.env, SVC_SECRET_KEY: TEST_SECRET_KEY, LOG_LEVEL: 'warn' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  beforeAll(async () => {
    store = await offlineStore(backend, 'offline_mint');
    [companyId, first, second] = await withStore(async (core) => {
      const company = await createCompany(core.db, 'Offline GmbH');
      const scopes = ['api.teams.getAll'];
      return [
        company,
        await createLegacyKey(core, core.mappings, { companyId: company, name: 'Team sync', scopes }),
        await createLegacyKey(core, core.mappings, { companyId: company, name: 'Team export', scopes }),
      ] as const;
    });
  });
  afterAll(async () => store?.drop());

  it('links what legacy-keys mint-successor and keys mint for a successor user mint, as the API does', async () => {
    const minted = svcServer('legacy-keys', 'mint-successor', first.id, '--capabilities', 'mcp:teams:read');
    expect(minted.code, minted.stderr).toBe(0);
    const { key, successor } = JSON.parse(minted.stdout);
    expect(successor).toMatchObject({ userEmail: dedicatedUserEmail('v4-successor', first.id, companyId), capabilities: ['mcp:teams:read'], apiKey: expect.stringMatching(/^svc_sk_/) });
    expect(key.cutover).toMatchObject({ stage: 'successor_minted', successor: { keyId: successor.keyId } });

    // The old audit's way: a key minted for the integration's user. It is that key's successor now.
    const secondUser = dedicatedUserEmail('v4-successor', second.id, companyId);
    const byUser = svcServer('keys', 'mint', '--user', secondUser, '--capabilities', 'all');
    expect(byUser.code, byUser.stderr).toBe(0);
    const linked = JSON.parse(byUser.stdout);
    expect(linked.key).toMatchObject({ id: second.id, cutover: { stage: 'successor_minted', successor: { keyId: linked.successor.keyId } } });
    expect(linked.successor).toMatchObject({ userEmail: secondUser, capabilities: ['mcp:teams:read'] });

    // A second key for a successor user is refused as the API refuses it: never an unlinked key beside the successor.
    const again = svcServer('keys', 'mint', '--user', dedicatedUserEmail('v4-successor', first.id, companyId), '--capabilities', 'mcp:teams:read');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('successor_exists');

    await withStore(async (core) => {
      const stages = (await listLegacyKeys(core, { companyIds: [companyId] })).map((k) => [k.id, k.cutover.stage, k.cutover.successor?.keyId]);
      expect(stages.sort()).toEqual([[first.id, 'successor_minted', successor.keyId], [second.id, 'successor_minted', linked.successor.keyId]].sort());
      const events = (await recentCutoverEvents(core.db, [companyId])).map((e) => [e.legacyKeyId, e.action, e.by, e.admin, e.successorKeyId]);
      expect(events).toEqual([
        [second.id, 'successor_minted', 'operator', null, linked.successor.keyId],
        [first.id, 'successor_minted', 'operator', null, successor.keyId],
      ]);
    });
  });
});
