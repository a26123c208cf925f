#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { packageVersion } from '../src/version.js';

/*
 * svc: the command-line client of the v4 API. Exit codes: 0 ok, 1 API error,
 * 2 usage error, 4 authentication required or refused.
 */

const EXIT = { ok: 0, apiError: 1, usage: 2, auth: 4 } as const;

interface GlobalFlags {
  apiKey?: string;
  apiUrl: string;
  format: 'json' | 'text';
}

async function whoami(flags: GlobalFlags): Promise<number> {
  const apiKey = flags.apiKey ?? process.env.SVC_API_KEY;
  if (!apiKey) {
    process.stderr.write('svc: no API key: pass --api-key or set SVC_API_KEY\n');
    return EXIT.auth;
  }
  const response = await fetch(new URL('/v4/me', flags.apiUrl), { headers: { 'x-api-key': apiKey } });
  const body = (await response.json()) as { ok: boolean; data?: { user: { email: string; role: string }; capabilities: string[] }; error?: { message: string } };
  if (flags.format === 'json') process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  if (!body.ok || !body.data) {
    process.stderr.write(`svc: ${body.error?.message ?? `HTTP ${response.status}`}\n`);
    return response.status === 401 ? EXIT.auth : EXIT.apiError;
  }
  if (flags.format === 'text') {
    process.stdout.write(`${body.data.user.email} (${body.data.user.role})\n${body.data.capabilities.join('\n')}\n`);
  }
  return EXIT.ok;
}

async function main(argv: string[]): Promise<number> {
  const program = new Command('svc')
    .description('Command-line client of the Device Lifecycle Service v4 API')
    .version(packageVersion())
    .option('--api-key <key>', 'API key (else SVC_API_KEY)')
    .option('--api-url <url>', 'base address of the API', 'http://127.0.0.1:3001')
    .option('--format <format>', 'json or text', 'text')
    .exitOverride();
  let code: number = EXIT.ok;
  program
    .command('whoami')
    .description('show the identity and access the credential resolves to (GET /v4/me)')
    .action(async () => {
      code = await whoami(program.opts<GlobalFlags>());
    });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.apiError;
  }
}

process.exitCode = await main(process.argv);
