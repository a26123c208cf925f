import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { EXIT, messageLine, usageError, type ExitCode } from '../exit-codes.js';
import { readStdin, type CliIo } from '../io.js';
import { chooseFormat, REPORT_FORMATS, reportLayout } from '../output.js';
import type { GlobalOptions } from '../session.js';
import { buildReport, DEFAULT_FAIL_ON, FAIL_ON_VALUES, parseFailOn, type AuditInput, type AuditedKey, type UsageRow } from './report.js';
import { renderMarkdownReport, renderTableReport } from './render.js';
import { readScopeTable } from './scope-table.js';
import { registerMigratePlanCommand } from './plan.js';
import { registerShadowReportCommand } from './shadow-report.js';

interface AuditFlags {
  scopes?: string;
  scopesFile?: string;
  key?: string;
  days: string;
  failOn: string;
  ignore?: string[];
  asOf?: string;
}

const splitList = (text: string) => text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

/** Every `scopes` (or OAuth-style `scope`) value in a config document, as a list or a space/comma-separated string. */
function scopesInDocument(document: unknown): string[] {
  if (typeof document === 'string') return splitList(document);
  if (Array.isArray(document)) {
    return document.every((item) => typeof item === 'string') ? document.flatMap(splitList) : document.flatMap(scopesInDocument);
  }
  if (typeof document !== 'object' || document === null) return [];
  return Object.entries(document).flatMap(([key, value]) => {
    if (key === 'scopes' || key === 'scope') {
      if (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'))) return scopesInDocument(value);
    }
    return typeof value === 'object' ? scopesInDocument(value) : [];
  });
}

/** One scope per line (# comments allowed), or the JSON/YAML of an integration's config holding a `scopes` list. */
export function scopesFromFile(file: string, text: string): string[] {
  let document: unknown;
  try {
    document = parse(text);
  } catch {
    document = text;
  }
  // Plain lines read as one folded YAML string; comments were dropped by the parser.
  const scopes = document === null ? [] : scopesInDocument(document);
  if (scopes.length === 0) {
    throw usageError(`--scopes-file ${file}: no scopes found: give one per line, a JSON/YAML list, or a config with a "scopes" key`);
  }
  return scopes;
}

function parseAsOf(text: string | undefined): Date {
  if (text === undefined) return new Date();
  const date = new Date(`${text}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(date.getTime())) throw usageError(`--as-of ${text}: give a date as YYYY-MM-DD`);
  return date;
}

/** --key: the legacy key's scopes and usage, from the admin API (the only input needing the network). */
async function readKey(globals: GlobalOptions, io: CliIo, id: string): Promise<{ key: AuditedKey; usage: UsageRow[] }> {
  const { Session } = await import('../session.js');
  const envelope = await new Session({ ...globals, format: 'json' }, io).call({ method: 'GET', path: `/v4/admin/legacy-keys/${encodeURIComponent(id)}` });
  return envelope.data as { key: AuditedKey; usage: UsageRow[] };
}

async function runAudit(flags: AuditFlags, globals: GlobalOptions, io: CliIo): Promise<ExitCode> {
  const format = chooseFormat(globals.format, REPORT_FORMATS);
  const sources = [flags.scopes, flags.scopesFile, flags.key].filter((s) => s !== undefined);
  if (sources.length !== 1) throw usageError('Give exactly one of --scopes a,b,c, --scopes-file <file> or --key <legacy key id>');
  const days = Number(flags.days);
  if (!Number.isInteger(days) || days < 1) throw usageError(`--days ${flags.days}: give a whole number of days, at least 1`);

  const input: AuditInput = {
    scopes: [],
    source: '',
    days,
    asOf: parseAsOf(flags.asOf),
    failOn: flags.failOn === 'none' ? [] : parseFailOn(flags.failOn),
    ignore: (flags.ignore ?? []).flatMap(splitList),
  };
  if (flags.scopes !== undefined) {
    input.scopes = splitList(flags.scopes);
    input.source = `${input.scopes.length} scope(s) given with --scopes`;
  } else if (flags.scopesFile !== undefined) {
    let text: string;
    try {
      text = flags.scopesFile === '-' ? await readStdin(io) : readFileSync(flags.scopesFile, 'utf8');
    } catch (error) {
      throw usageError(`--scopes-file ${flags.scopesFile}: cannot be read: ${(error as Error).message}`);
    }
    input.scopes = scopesFromFile(flags.scopesFile, text);
    input.source = `the scopes of ${flags.scopesFile}`;
  } else {
    const { key, usage } = await readKey(globals, io, flags.key!);
    Object.assign(input, { scopes: key.scopes, source: `legacy key ${key.id}`, key, usage });
  }
  if (input.scopes.length === 0) throw usageError('No scopes to audit');

  const report = buildReport(readScopeTable(), input);
  for (const scope of input.ignore.filter((s) => !report.scopes.some((f) => f.scope === s))) {
    io.stderr.write(messageLine('warning', `--ignore ${scope}: not among the audited scopes`, io));
  }
  if (format === 'json') io.stdout.write(`${JSON.stringify({ ok: true, data: report, meta: {} }, null, 2)}\n`);
  else if (format === 'markdown') io.stdout.write(renderMarkdownReport(report));
  else {
    const { width, colour } = reportLayout(format, io);
    io.stdout.write(renderTableReport(report, width, colour));
  }
  return report.findings.length > 0 ? EXIT.failure : EXIT.ok;
}

export function registerMigrateCommands(program: Command, io: CliIo, done: (code: ExitCode) => void): void {
  const migrate = program.command('migrate').description('move an integration off the v2 API');
  registerShadowReportCommand(migrate, io, done);
  registerMigratePlanCommand(migrate, io, done);
  migrate
    .command('audit')
    .description(
      'Audit v2 scopes against v4: for each scope its v4 capability, endpoints and status (mapped, mapped-broader, no-successor, covered-by-order-type) and, with --key, whether it was called; then the least v4 key to mint, the reissue steps (as the plan gives them: mint-successor, a first v4 call, quiet, disable) and the days to the v2 sunset. --scopes and --scopes-file work offline from the bundled maps.',
    )
    .option('--scopes <list>', 'v2 scopes, comma-separated')
    .option('--scopes-file <file>', 'a file of scopes: one per line, or the JSON/YAML of an integration config with a "scopes" list; - for stdin')
    .option('--key <id>', 'a legacy key id (lk_…): its scopes and recorded usage, read through the admin API (needs an admin v4 key)')
    .option('--days <n>', 'with --key: the usage window in days', '30')
    .option('--fail-on <list>', `what makes the exit code 1: comma-separated of ${FAIL_ON_VALUES.join(', ')}, or none`, DEFAULT_FAIL_ON.join(','))
    .option('--ignore <scope>', 'a known exception that never fails the audit; repeat or comma-separate', (value: string, previous?: string[]) => [...(previous ?? []), value])
    .option('--as-of <date>', 'count usage and days to the sunset as of this date (YYYY-MM-DD; default today)')
    .addHelpText('after', '\nA wildcard scope (api.orders.*) stands for every scope of the maps under it. A scope granted but not called in the window is to drop: it fails only under --fail-on unused. A retired (disabled) or quiet key is flagged; the scopes of a retired key never fail the audit.\nOutput: --format table (default, fitted to the terminal), json, text (the table report, never cut nor coloured) or markdown (for a migration ticket).\nExit codes: 0 clean, 1 findings (see --fail-on), 2 bad input such as an unknown scope.')
    .action(async (flags: AuditFlags, command: Command) => {
      done(await runAudit(flags, command.optsWithGlobals<GlobalOptions>(), io));
    });
}
