import { Command } from 'commander';
import { packageVersion } from '../../kit/version.js';
import { addAccountCommands } from './account-commands.js';
import { addLegacyKeyCommands } from './legacy-key-commands.js';
import { addOrderCommands } from './order-commands.js';
import { addSecretKeyCommands } from './secret-key-commands.js';
import { addServeCommands } from './serve-commands.js';
import { addStoreCommands } from './store-commands.js';

/** svc-server's exit codes, and what each means (docs/reference/cli.md lists them). */
export const SERVER_EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export const SERVER_EXIT_MEANINGS: Record<keyof typeof SERVER_EXIT, string> = {
  ok: 'success',
  failure: 'the command failed: invalid configuration, a store in use by another process, a refused operation, or an unexpected error (its stack on stderr)',
  usage: 'usage error: unknown command or option, or a missing or invalid argument',
};

/**
 * svc-server's commands. Each loads what it needs when it runs, so the program itself is a few
 * small modules; every command has --json for scripts (data on stdout, messages on stderr).
 */
export function buildProgram(): Command {
  const program = new Command('svc-server')
    .description('Device Lifecycle Service: v4 core and v2 migration gateway')
    .version(packageVersion())
    .showHelpAfterError();
  addServeCommands(program);
  addStoreCommands(program);
  addSecretKeyCommands(program);
  addAccountCommands(program);
  addLegacyKeyCommands(program);
  addOrderCommands(program);
  return program;
}
