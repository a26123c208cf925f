import type { Command } from 'commander';
import type { MigrationPlan } from '../../src/migration/migration-plan.js';
import { EXIT, usageError, type ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { chooseFormat, renderTable, REPORT_FORMATS, reportLayout, style } from '../output.js';
import type { GlobalOptions } from '../session.js';
import { brownoutNotice } from '../../src/legacy/sunset-status.js';

const optional = (line: string | undefined) => (line === undefined ? [] : [line]);

/*
 * `svc migrate plan --key <id>`: one integration's migration plan, computed by the server from what
 * its legacy key called (GET /v4/admin/legacy-keys/:id/plan), as a table, JSON, or Markdown that
 * pastes as a ticket: title, summary, and a checklist with the exact commands.
 */

const successorOf = (endpoint: MigrationPlan['endpoints'][number]) => endpoint.successor.map((call) => `${call.method} ${call.path}`).join(', then ');
const stageDates = (plan: MigrationPlan) =>
  plan.cutover.stages
    .filter((s) => s.at !== null)
    .map((s) => `${s.stage} ${s.at!.slice(0, 10)}`)
    .join(' · ');

function summaryLines(plan: MigrationPlan): string[] {
  const { key, totals, window, sunset, cutover, capabilities } = plan;
  return [
    `Legacy key ${key.id} "${key.name}" (${key.companyId}): ${totals.calls} v2 call(s) since ${window.since}, ${totals.movable} with a v4 successor, ${totals.staying} staying on v2.`,
    `Stage: ${cutover.stage} (${stageDates(plan)})${cutover.nextStep ? `. Next: ${cutover.nextStep}` : ''}.`,
    `Successor key capabilities: ${capabilities.minimal.join(', ') || 'none'}${capabilities.forLookups.length > 0 ? ` (and ${capabilities.forLookups.join(', ')} only for lookups)` : ''}; it acts as ${plan.successorUser}.`,
    `v2 sunset: ${sunset.at.slice(0, 10)} (${sunset.daysLeft} days left).`,
    // A server older than the brownouts field answers none.
    ...optional(sunset.brownouts ? brownoutNotice(sunset.brownouts, new Date(plan.generatedAt)) : undefined),
  ];
}

export function renderPlanTable(plan: MigrationPlan, width: number, colour: boolean): string {
  const table = (rows: Record<string, unknown>[]) => renderTable(rows, width, colour).text.trimEnd();
  const moves = plan.endpoints.map((e) => ({ 'v2 endpoint': e.endpoint, calls: e.calls, 'v4 instead': successorOf(e), capability: e.capabilities.join(', '), changes: e.changes.length }));
  const staying = plan.staysOnV2.map((e) => ({ 'v2 endpoint': e.endpoint, calls: e.calls, why: e.reason }));
  const steps = plan.steps.flatMap((step) => [`${step.done ? '[x]' : '[ ]'} ${step.text}`, ...(step.command ? [`      ${step.command}`] : [])]);
  return `${[
    style(colour, 'bold', `Migration plan of legacy key ${plan.key.id} "${plan.key.name}"`),
    ...summaryLines(plan),
    '',
    style(colour, 'bold', 'Endpoints to move, most called first'),
    table(moves),
    '',
    style(colour, 'bold', 'Stays on v2 (no v4 successor)'),
    table(staying),
    '',
    style(colour, 'bold', 'Steps'),
    ...steps,
    '',
    `Field changes and examples: ${plan.endpoints.length > 0 ? plan.endpoints.map((e) => e.guide).join(' ') : '/docs/migration'}`,
  ].join('\n')}\n`;
}

/** Markdown for a migration ticket: a title, the summary, what to change per endpoint, and a checklist. */
export function renderPlanMarkdown(plan: MigrationPlan): string {
  const code = (text: string) => `\`${text}\``;
  const lines = [`# Migrate "${plan.key.name}" (${plan.key.id}) from API v2 to v4`, '', ...summaryLines(plan), '', '## Endpoints to move, most called first', ''];
  if (plan.endpoints.length === 0) lines.push(`No call to an endpoint with a v4 successor since ${plan.window.since}.`);
  for (const e of plan.endpoints) {
    lines.push(`### ${code(e.endpoint)}: ${e.calls} call(s) → ${e.successor.map((call) => code(`${call.method} ${call.path}`)).join(', then ')}`, '');
    lines.push(...e.changes.map((change) => `- ${change.direction === 'request' ? 'You send' : 'You get back'}: ${change.text}`));
    if (e.example && e.example.v4.length > 0) lines.push('', '```sh', ...e.example.v4.map((call) => call.curl), '```');
    lines.push('', `Guide: ${e.guide}`, '');
  }
  lines.push('## Stays on v2 (no v4 successor)', '');
  if (plan.staysOnV2.length === 0) lines.push('Nothing: every endpoint called has a v4 successor.');
  lines.push(...plan.staysOnV2.map((e) => `- ${code(e.endpoint)} (${e.calls} call(s)): ${e.reason}${e.instead ? `. Instead: ${e.instead}` : ''}`));
  lines.push('', '## Checklist', '');
  for (const step of plan.steps) {
    lines.push(`- [${step.done ? 'x' : ' '}] ${step.text}`);
    if (step.command) lines.push('  ```sh', `  ${step.command}`, '  ```');
  }
  return `${lines.join('\n')}\n`;
}

async function runPlan(key: string | undefined, globals: GlobalOptions, io: CliIo): Promise<ExitCode> {
  const format = chooseFormat(globals.format, REPORT_FORMATS);
  if (key === undefined || key.trim() === '') throw usageError('--key <legacy key id> is required (lk_…; see svc legacy-keys list)');
  const { Session } = await import('../session.js');
  const envelope = await new Session({ ...globals, format: 'json' }, io).call({ method: 'GET', path: `/v4/admin/legacy-keys/${encodeURIComponent(key)}/plan` });
  const plan = envelope.data as MigrationPlan;
  if (format === 'json') io.stdout.write(`${JSON.stringify(envelope, null, 2)}\n`);
  else if (format === 'markdown') io.stdout.write(renderPlanMarkdown(plan));
  else {
    const { width, colour } = reportLayout(format, io);
    io.stdout.write(renderPlanTable(plan, width, colour));
  }
  return EXIT.ok;
}

export function registerMigratePlanCommand(migrate: Command, io: CliIo, done: (code: ExitCode) => void): void {
  migrate
    .command('plan')
    .description(
      'The migration plan of one integration, from what its legacy key called in the last 30 days: each v2 endpoint with its v4 call(s) and field changes, most called first; what stays on v2 and why; the least capabilities of its successor key; the cutover stage with its dates; and the steps with the exact commands. Needs an admin v4 key.',
    )
    .option('--key <id>', 'the legacy key id (lk_…)')
    .addHelpText('after', '\nOutput: --format table (default, fitted to the terminal), json, text (the table report, never cut nor coloured) or markdown (pastes as a ticket).')
    .action(async (flags: { key?: string }, command: Command) => {
      done(await runPlan(flags.key, command.optsWithGlobals<GlobalOptions>(), io));
    });
}
