import { Command, CommanderError, Option } from 'commander';
import { errorObject } from '../src/kit/errors.js';
import { packageVersion } from '../src/kit/version.js';
import { CliError, DEFAULT_TIMEOUT_SECONDS, EXIT, EXIT_CODES_HELP, messageLine, type ExitCode } from './exit-codes.js';
import { useColour, type CliIo } from './io.js';

/*
 * svc: the command-line client of the v4 API, and the v2 → v4 scope audit. A start loads only
 * what its command needs: --version and `migrate audit --scopes` never load the operation table,
 * zod or the HTTP client. Data goes to stdout, messages to stderr; exit codes in `svc help exit-codes`.
 * One run touches nothing but its io, so a test runs many in one process (cli/svc.ts is the bin).
 */

/** Global options that take a value, so the command word can be found without a full parse. */
const VALUE_OPTIONS = new Set(['--api-key', '--environment', '--api-url', '--format', '--timeout']);

function commandWord(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (VALUE_OPTIONS.has(arg)) i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

function formatOf(program: Command, args: readonly string[]): string | undefined {
  const parsed = program.opts<{ format?: string }>().format;
  const at = args.indexOf('--format');
  return at >= 0 ? args[at + 1] : (args.find((a) => a.startsWith('--format='))?.slice('--format='.length) ?? parsed);
}

function buildProgram(io: CliIo): Command {
  return new Command('svc')
    .description('Command-line client of the Device Lifecycle Service v4 API, and the v2 → v4 scope audit')
    .version(packageVersion())
    .addOption(new Option('--api-key <key>', 'v4 API key (else SVC_API_KEY, else the active account)'))
    .addOption(
      new Option(
        '--environment <name>',
        'prod (default), io (alias of prod), next (staging), local (127.0.0.1:3001; local:<port> for another port) or dev (from the config file)',
      ),
    )
    .addOption(new Option('--api-url <url>', 'base address of the API; overrides --environment'))
    .addOption(new Option('--allow-localhost', 'allow plain HTTP to 127.0.0.1 (local servers only); auth login stores it with the account'))
    .addOption(new Option('--format <format>', 'table (default; fitted to a terminal, whole when piped), json (the {ok, data, meta} envelope) or text (tab-separated, never cut); the migrate commands also take markdown, and text prints their report never cut nor coloured'))
    .addOption(new Option('--timeout <seconds>', `how long to wait for each answer of the API (else SVC_TIMEOUT, else ${DEFAULT_TIMEOUT_SECONDS}); exit 124 when it passes`))
    .addHelpText('after', '\nExit codes: svc help exit-codes.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Commander's own messages ("error: unknown option …") take svc's one prefix too.
      outputError: (message, write) => write(messageLine('error', message.replace(/^error: /, ''), io)),
      // The terminal's width, else commander's own default of 80.
      getOutHelpWidth: () => (io.stdout.isTTY ? io.stdout.columns : undefined) ?? 80,
      getErrHelpWidth: () => (io.stderr.isTTY ? io.stderr.columns : undefined) ?? 80,
      getOutHasColors: () => useColour(io.stdout, io.env),
      getErrHasColors: () => useColour(io.stderr, io.env),
    })
    .showSuggestionAfterError();
}

/** Registers only what the command word needs; an unknown or missing word gets every command, for help and suggestions. */
async function register(program: Command, args: readonly string[], io: CliIo, onExit: (code: ExitCode) => void): Promise<void> {
  const word = commandWord(args);
  if (word === undefined && (args.includes('--version') || args.includes('-V'))) return;
  const all = word !== 'auth' && word !== 'migrate';
  if (all) {
    const [{ OPERATIONS }, { registerOperationCommands }, { Session }] = await Promise.all([
      import('../src/app/operation-table.js'),
      import('./operations.js'),
      import('./session.js'),
    ]);
    // The command word's own operations when it names a resource (their flags come from JSON Schema, worth not computing for all).
    const named = OPERATIONS.filter((op) => op.cli.split(' ')[0] === word);
    registerOperationCommands(program, named.length > 0 ? named : OPERATIONS, () => new Session(program.opts(), io));
  }
  if (all || word === 'auth') (await import('./auth.js')).registerAuthCommands(program, io);
  if (all || word === 'migrate') (await import('./audit/command.js')).registerMigrateCommands(program, io, onExit);
  program.helpCommand(false);
  program
    .command('help')
    .description('help on a command, or on a topic: exit-codes')
    .argument('[topic...]')
    .action((topic: string[]) => {
      if (topic.join(' ') === 'exit-codes') {
        io.stdout.write(EXIT_CODES_HELP);
        return;
      }
      let command = program;
      for (const word of topic) {
        const next = command.commands.find((c) => c.name() === word);
        if (!next) throw new CliError(EXIT.usage, `No help topic "${topic.join(' ')}": try svc --help or svc help exit-codes`);
        command = next;
      }
      command.outputHelp();
    });
}

/** The program with every command registered, as help shows it (the generated CLI reference walks it). */
export async function fullProgram(io: CliIo): Promise<Command> {
  const program = buildProgram(io);
  await register(program, [], io, () => undefined);
  return program;
}

function reportError(io: CliIo, error: CliError, format: string | undefined): void {
  if (format === 'json') {
    const envelope =
      'envelope' in error
        ? error.envelope
        : { ok: false, error: errorObject(error), meta: {} };
    io.stdout.write(`${JSON.stringify(envelope, null, 2)}\n`);
  }
  io.stderr.write(messageLine('error', `${error.message}${error.code && !['usage_error', 'error'].includes(error.code) ? ` (${error.code})` : ''}`, io));
  const details = Array.isArray(error.details) ? (error.details as unknown[]) : [];
  for (const detail of details) {
    if (typeof detail === 'object' && detail !== null && 'field' in detail && 'message' in detail) {
      io.stderr.write(`  ${String(detail.field)}: ${String(detail.message)}\n`);
    }
  }
}

/** Runs one command line, argv as process.argv (node, the script, then the arguments); resolves with the exit code. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const args = argv.slice(2);
  const program = buildProgram(io);
  let code: ExitCode = EXIT.ok;
  try {
    await register(program, args, io, (c) => (code = c));
    // Said outright: left to guess, commander reads the host process's own flags (node -e).
    await program.parseAsync(argv, { from: 'node' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok;
      if (formatOf(program, args) === 'json') {
        io.stdout.write(`${JSON.stringify({ ok: false, error: errorObject({ code: 'usage_error', message: error.message.replace(/^error: /, '') }), meta: {} }, null, 2)}\n`);
      }
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      reportError(io, error, formatOf(program, args));
      return error.exitCode;
    }
    io.stderr.write(messageLine('error', error instanceof Error ? (error.stack ?? error.message) : String(error), io));
    return EXIT.failure;
  }
}
