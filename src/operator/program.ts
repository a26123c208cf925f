import { Command } from 'commander';
import { packageVersion } from '../version.js';
import { addAccountCommands } from './account-commands.js';
import { addLegacyKeyCommands } from './legacy-key-commands.js';
import { addOrderCommands } from './order-commands.js';
import { addSecretKeyCommands } from './secret-key-commands.js';
import { addServeCommands } from './serve-commands.js';
import { addStoreCommands } from './store-commands.js';

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
