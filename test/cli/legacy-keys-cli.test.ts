import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SVC_SERVER_STEPS_TIMEOUT_MS } from '../helpers/harness.js';
import { runCommandSync } from '../helpers/server-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
import { resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import { loadMappingsToServe } from '../../src/legacy/mappings.js';

// The operator's commands open the store themselves; PGlite is enough to exercise them.
describe('svc-server legacy-keys create|import|list|disable|enable [pglite]', { timeout: SVC_SERVER_STEPS_TIMEOUT_MS }, () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;

  const run = (...args: string[]) => {
    const result = runCommandSync(args, env);
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const json = (...args: string[]) => {
    const result = run(...args, '--json');
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  /** Resolves in-process, as the gateway will; the store is released before the next command. */
  const resolve = async (rawKey: string) => {
    const core = await createCore(loadConfig({}, { dataDir, logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    try {
      return await resolveLegacyKey(core, rawKey);
    } finally {
      await core.close();
    }
  };

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-legacy-'));
    env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
    const seeded = run('seed', '--demo', '--json');
    expect(seeded.code, seeded.stderr).toBe(0);
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates, lists, disables and enables again a key, showing the raw key only once', async () => {
    const created = json('legacy-keys', 'create', '--company', 'co_acme', '--name', 'Payroll', '--scopes', 'api.teams.getAll, api.team.get');
    expect(created).toMatchObject({ companyId: 'co_acme', name: 'Payroll', scopes: ['api.teams.getAll', 'api.team.get'], capabilities: ['mcp:teams:read'] });
    expect(created.legacyKey).toMatch(/^lk_live_/);
    expect(await resolve(created.legacyKey)).toMatchObject({ status: 'active', legacyKeyId: created.id, companyId: 'co_acme' });

    const listed = json('legacy-keys', 'list', '--company', 'co_acme');
    expect(listed.map((k: { id: string }) => k.id)).toContain(created.id);
    // The demo seed registers its own two legacy keys on Acme as well.
    expect(listed).toHaveLength(3);
    expect(JSON.stringify(listed)).not.toContain(created.legacyKey);
    // Globex holds only the demo's retired key.
    expect(json('legacy-keys', 'list', '--company', 'co_globex').map((k: { name: string }) => k.name)).toEqual(['Globex HR export (retired)']);

    const human = run('legacy-keys', 'list');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`${created.id}  co_acme  ${created.keyHint}  active  Payroll`);

    // No successor yet: the operator's disable is refused like the API's, and forced only with a reason.
    const refused = run('legacy-keys', 'disable', created.id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`legacy_key_in_use: Legacy key ${created.id} ("Payroll") is at stage v2_only, not v2_quiet: it has no successor v4 key;`);
    const noReason = run('legacy-keys', 'disable', created.id, '--force');
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toContain('validation_failed: Invalid arguments: reason: required when force is true');
    expect(await resolve(created.legacyKey)).toMatchObject({ status: 'active' });
    const disabled = json('legacy-keys', 'disable', created.id, '--force', '--reason', 'Payroll moved to the HR suite');
    expect(disabled).toMatchObject({ id: created.id, disabledAt: expect.any(String), cutover: { disabled: { by: 'operator', reason: 'Payroll moved to the HR suite' } } });
    expect(await resolve(created.legacyKey)).toEqual({ status: 'disabled', legacyKeyId: created.id });
    const again = run('legacy-keys', 'disable', created.id, '--force', '--reason', 'again');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('legacy_key_disabled');

    // The undo, until the sunset of the package's maps; the operator's CLI runs on the real clock.
    if (Date.now() < loadMappingsToServe().sunset.sunset.getTime()) {
      const enabled = json('legacy-keys', 'enable', created.id);
      expect(enabled).toMatchObject({ id: created.id, disabledAt: null, cutover: { disabled: null, enabled: { by: 'operator', reason: null } } });
      expect(enabled.bridgeKeyId).not.toBe(disabled.bridgeKeyId);
      expect(await resolve(created.legacyKey)).toMatchObject({ status: 'active', legacyKeyId: created.id });
      expect(run('legacy-keys', 'enable', created.id).stderr).toContain('legacy_key_active');
    } else {
      expect(run('legacy-keys', 'enable', created.id).stderr).toContain('sunset_passed');
    }
  });

  it('imports a YAML or JSON list in one transaction and refuses duplicates clearly', async () => {
    const yamlFile = join(dataDir, 'keys.yaml');
    writeFileSync(
      yamlFile,
      [
        '- company: co_acme',
        '  name: Old HR tool',
        '  key: hr-legacy-key-0001',
        '  scopes: [api.employees.getAll, api.catalogs.getAll]',
        '- company: co_globex',
        '  name: Old catalog sync',
        '  key: catalog-legacy-key-0002',
        '  scopes: [api.catalogs.getAll]',
      ].join('\n'),
    );
    const imported = json('legacy-keys', 'import', yamlFile);
    expect(imported.imported).toBe(2);
    expect(imported.keys.map((k: { name: string; bridgeKeyId: string | null }) => [k.name, k.bridgeKeyId === null])).toEqual([
      ['Old HR tool', false],
      ['Old catalog sync', true],
    ]);
    expect(JSON.stringify(imported)).not.toContain('hr-legacy-key-0001');
    expect(await resolve('hr-legacy-key-0001')).toMatchObject({ status: 'active', companyId: 'co_acme', bridgeApiKey: expect.stringMatching(/^svc_sk_/) });

    const jsonFile = join(dataDir, 'keys.json');
    writeFileSync(
      jsonFile,
      JSON.stringify([
        { company: 'co_acme', name: 'New one', key: 'fresh-legacy-key-0003', scopes: ['api.orders.getAll'] },
        { company: 'co_acme', name: 'Same again', key: 'hr-legacy-key-0001', scopes: ['api.orders.getAll'] },
      ]),
    );
    const duplicate = run('legacy-keys', 'import', jsonFile, '--json');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('legacy_key_exists: Entry 2 ("Same again"): This legacy key is already registered');
    expect(await resolve('fresh-legacy-key-0003')).toEqual({ status: 'unknown' });

    const typo = run('legacy-keys', 'create', '--company', 'co_acme', '--name', 'Typo', '--scopes', 'api.teams.getall');
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('unknown v2 scope api.teams.getall (did you mean api.teams.getAll?)');

    const missing = run('legacy-keys', 'import', join(dataDir, 'nope.yaml'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('import_file_unreadable');
  });
});
