import type { Command } from 'commander';
import { describeKeys, seedDemoInto } from '../demo-seed.js';
import { AppError } from '../../kit/errors.js';
import { output, storeOptions, withCore, type StoreFlags } from './store-options.js';

/** `migrate` and `seed`: the store's schema and first data. */
export function addStoreCommands(program: Command): void {
  storeOptions(program.command('migrate').description('apply pending schema migrations (every start applies them too)')).action(async (flags: StoreFlags) => {
    const { migrate } = await import('../../store/migrations.js');
    // createCore already migrates; asking again reports that nothing is pending.
    await withCore(flags, async (core) => {
      const applied = await migrate(core.db);
      output(flags, { applied, store: core.db.kind }, applied.length ? `Applied ${applied.join(', ')}` : 'Schema is up to date');
    });
  });

  storeOptions(
    program.command('seed').description('load a data set into an empty store and print its API keys').requiredOption('--demo', 'the demo data set'),
  ).action(async (flags: StoreFlags) => {
    const { isEmpty } = await import('../../domain/demo.js');
    await withCore(flags, async (core) => {
      if (!(await isEmpty(core.db))) throw new AppError(409, 'store_not_empty', 'The store already has data; seed an empty one');
      const summary = await seedDemoInto(core);
      output(flags, summary, describeKeys(summary));
    });
  });
}
