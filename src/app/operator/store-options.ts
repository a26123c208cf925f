import { Option, type Command } from 'commander';
import { loadConfig, type Config } from '../../kit/config.js';
import type { Core } from '../core.js';

/* The flags every svc-server command shares, and the store opened for one command. */

export interface StoreFlags {
  dataDir?: string;
  databaseUrl?: string;
  logLevel?: string;
  json?: boolean;
}

export const storeOptions = (command: Command) =>
  command
    .addOption(new Option('--data-dir <dir>', 'embedded store directory (env DATA_DIR)'))
    .addOption(new Option('--database-url <url>', 'PostgreSQL connection string (env DATABASE_URL)'))
    .addOption(new Option('--log-level <level>', 'log level (env LOG_LEVEL)'))
    .option('--json', 'machine-readable output on stdout');

export function configFrom(flags: StoreFlags & { port?: string; host?: string }): Config {
  return loadConfig(process.env, {
    dataDir: flags.dataDir,
    databaseUrl: flags.databaseUrl,
    logLevel: flags.logLevel,
    port: flags.port,
    host: flags.host,
  });
}

/** Opens the store for a one-shot command: quiet logs, closed afterwards whatever happens. */
export async function withCore<T>(flags: StoreFlags, work: (core: Core) => Promise<T>): Promise<T> {
  const { createCore } = await import('../core.js');
  const { pino } = await import('pino');
  const config = configFrom(flags);
  const core = await createCore(config, { logger: pino({ level: flags.logLevel ?? 'warn' }) });
  try {
    return await work(core);
  } finally {
    await core.close();
  }
}

export function output(flags: StoreFlags, data: unknown, human: string): void {
  // One object on one line: with `serve --json` the JSON log lines follow on the same stream.
  process.stdout.write(flags.json ? `${JSON.stringify(data)}\n` : `${human}\n`);
}
