/* svc-server's command: runs one and turns its outcome into an exit code and a message. */
import { CommanderError, type Command } from 'commander';
import { z } from 'zod';
import { ConfigError } from '../../kit/config.js';
import { AppError, validationError } from '../../kit/errors.js';
import { buildProgram, SERVER_EXIT } from './program.js';
import { DataDirInUseError } from '../../store/db.js';

export async function runServerCommand(argv: string[]): Promise<void> {
  const program = buildProgram();
  // Usage errors of any subcommand must reach the catch below to exit 2.
  const override = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(override);
  };
  override(program);
  try {
    await program.parseAsync(argv);
  } catch (caught) {
    let error = caught;
    if (error instanceof CommanderError) {
      process.exit(error.exitCode === 0 ? SERVER_EXIT.ok : SERVER_EXIT.usage);
    }
    if (error instanceof z.ZodError) error = validationError(error, 'arguments');
    const known = error instanceof AppError || error instanceof ConfigError || error instanceof DataDirInUseError;
    const message = error instanceof AppError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`svc-server: ${known ? message : `unexpected error: ${message}`}\n`);
    if (!known && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exit(SERVER_EXIT.failure);
  }
}

