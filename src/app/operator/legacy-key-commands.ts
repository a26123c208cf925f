import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { AppError, notFound } from '../../kit/errors.js';
import type { MintedSuccessor } from '../../migration/cutover.js';
import type { LegacyKeySummary } from '../../legacy/legacy-keys.js';
import { output, storeOptions, withCore, type StoreFlags } from './store-options.js';

/** A minted successor: the raw key first, said to be shown once (also `keys mint` for a successor user). */
export function outputMintedSuccessor(flags: StoreFlags, { key, successor }: MintedSuccessor): void {
  output(
    flags,
    { key, successor },
    `${successor.apiKey}\n(successor key ${successor.keyId} of legacy key ${key.id}, for ${successor.userEmail} with ${successor.capabilities.join(', ')}; ` +
      `stage ${key.cutover.stage}; this is the only time the key is shown)`,
  );
}

/** `legacy-keys`: registering one provisions its bridge user and v4 key (the spec's reissue steps). */
export function addLegacyKeyCommands(program: Command): void {
  const legacyKeys = program.command('legacy-keys').description('register and retire legacy v2 keys served by the gateway');
  // The package's maps are found only when a command runs: the program itself never loads them.
  const withMappings = (command: Command) =>
    storeOptions(command.addOption(new Option('--mappings <dir>', 'the v2 → v4 maps (scopes.yaml …); default: the package’s')));
  const loadMaps = async (dir: string | undefined) => (await import('../../legacy/mappings.js')).loadMappingsToServe(dir);
  const describeLegacyKey = (key: LegacyKeySummary) =>
    `${key.id}  ${key.companyId}  ${key.keyHint}  ${key.disabledAt ? 'disabled' : 'active'}  ${key.name}  [${key.scopes.join(', ')}] → [${key.capabilities.join(', ')}]`;
  withMappings(
    legacyKeys
      .command('create')
      .description('generate a legacy key for a company; the raw key is printed once')
      .requiredOption('--company <id>', 'the company the key is bound to')
      .requiredOption('--name <name>', 'a label for the key')
      .requiredOption('--scopes <list>', 'comma-separated v2 scopes, e.g. api.employees.getAll,api.teams.getAll'),
  ).action(async (flags: StoreFlags & { company: string; name: string; scopes: string; mappings?: string }) => {
    const { createLegacyKey } = await import('../../legacy/legacy-keys.js');
    const mappings = await loadMaps(flags.mappings);
    const scopes = flags.scopes.split(',').map((s) => s.trim()).filter(Boolean);
    await withCore(flags, async (core) => {
      const { rawKey, ...key } = await createLegacyKey(core, mappings, { companyId: flags.company, name: flags.name, scopes });
      output(flags, { ...key, legacyKey: rawKey }, `${rawKey}
${describeLegacyKey(key)}
(this is the only time the key is shown)`);
    });
  });
  withMappings(
    legacyKeys
      .command('import')
      .description('register existing v2 keys from a JSON or YAML list of {company, name, key, scopes}, all or none')
      .argument('<file>'),
  ).action(async (file: string, flags: StoreFlags & { mappings?: string }) => {
    const { importLegacyKeys, parseImportDocument } = await import('../../legacy/legacy-keys.js');
    const mappings = await loadMaps(flags.mappings);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new AppError(400, 'import_file_unreadable', `Cannot read ${file}: ${(error as Error).message}`);
    }
    const document = parseImportDocument(text);
    await withCore(flags, async (core) => {
      const result = await importLegacyKeys(core, mappings, document);
      output(flags, result, [`Imported ${result.imported} legacy key(s):`, ...result.keys.map(describeLegacyKey)].join('\n'));
    });
  });
  storeOptions(legacyKeys.command('list').description('list legacy keys (never the keys themselves)').option('--company <id>', 'only the keys of this company')).action(
    async (flags: StoreFlags & { company?: string }) => {
      const { listLegacyKeys } = await import('../../legacy/legacy-keys.js');
      await withCore(flags, async (core) => {
        const keys = await listLegacyKeys(core, flags.company === undefined ? {} : { companyIds: [flags.company] });
        output(flags, keys, keys.length ? keys.map(describeLegacyKey).join('\n') : 'No legacy keys');
      });
    },
  );
  storeOptions(
    legacyKeys
      .command('disable')
      .description('disable a legacy key whose successor works and whose v2 use is quiet (stage v2_quiet), revoking its bridge key (takes effect on the next request)')
      .argument('<id>')
      .option('--force', 'disable before v2_quiet: cuts off an integration that may still be live; needs --reason')
      .option('--reason <text>', 'why, as the dashboard shows it; required with --force'),
  ).action(async (id: string, flags: StoreFlags & { force?: boolean; reason?: string }) => {
    const [{ DisableLegacyKeyInput }, { listLegacyKeys }, { disableWhenSafe }] = await Promise.all([
      import('../../migration/operations/legacy-keys.js'),
      import('../../legacy/legacy-keys.js'),
      import('../../migration/cutover.js'),
    ]);
    // The API's own rules: a ZodError here exits as validation_failed naming the field.
    const { force, reason } = DisableLegacyKeyInput.parse({ id, force: flags.force, reason: flags.reason });
    await withCore(flags, async (core) => {
      const [key] = await listLegacyKeys(core, { id });
      if (!key) throw notFound('Legacy key', id);
      const disabled = await disableWhenSafe(core, key, { by: 'operator', reason }, force);
      output(flags, disabled, `Disabled ${id}${disabled.bridgeKeyId ? `; bridge key ${disabled.bridgeKeyId} revoked` : ''}`);
    });
  });
  storeOptions(
    legacyKeys
      .command('mint-successor')
      .description("mint a legacy key's successor v4 key for its dedicated non-personal user and link it (stage successor_minted), as the API does; the raw key is printed once")
      .argument('<id>')
      .option('--capabilities <list>', 'comma-separated capabilities within the v4 reach of the key’s scopes (default: those the key’s v2 calls of the last 30 days need)')
      .option('--replace', 'revoke the current successor key and mint another'),
  ).action(async (id: string, flags: StoreFlags & { capabilities?: string; replace?: boolean }) => {
    const [{ mintSuccessorKey, OPERATOR }, { MintSuccessorInput }] = await Promise.all([import('../../migration/cutover.js'), import('../../migration/operations/legacy-keys.js')]);
    // The API's own rules: a ZodError here exits as validation_failed naming the field.
    const request = MintSuccessorInput.parse({ id, capabilities: flags.capabilities?.split(',').map((c) => c.trim()), replace: flags.replace });
    await withCore(flags, async (core) => outputMintedSuccessor(flags, await mintSuccessorKey(core, id, OPERATOR, request)));
  });
  storeOptions(
    legacyKeys
      .command('enable')
      .description('undo the disable of a legacy key until the sunset, with a new bridge key (takes effect on the next request)')
      .argument('<id>'),
  ).action(async (id: string, flags: StoreFlags) => {
    const { enableLegacyKey } = await import('../../legacy/legacy-keys.js');
    await withCore(flags, async (core) => {
      const key = await enableLegacyKey(core, id);
      output(flags, key, `Enabled ${id} again${key.bridgeKeyId ? `; new bridge key ${key.bridgeKeyId}` : ''}`);
    });
  });
}
