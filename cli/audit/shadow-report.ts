import type { Command } from 'commander';
import type { ShadowReport } from '../../src/migration/shadow-check.js';
import { EXIT, messageLine, usageError, type ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { chooseFormat, renderTable, REPORT_FORMATS, reportLayout, style } from '../output.js';
import type { GlobalOptions } from '../session.js';
import { markdownTable } from './render.js';

/*
 * `svc migrate shadow-report`: what the gateway's shadow check found (GET /v4/admin/shadow-report)
 * for people before a hostname is switched to the gateway, and as a gate for scripts
 * (--fail-on different).
 */

const FAIL_ON = ['different', 'none'] as const;
const DEFAULT_EXAMPLES = 5;

interface ShadowFlags {
  route?: string;
  examples: string;
  failOn: string;
}

type Route = ShadowReport['routes'][number];

/** The report narrowed to one route and to the last `examples` examples; totals are those of the routes kept. */
export function narrowReport(report: ShadowReport, route: string | undefined, examples: number): ShadowReport {
  const routes = route === undefined ? report.routes : report.routes.filter((r) => r.route === route);
  const totals = route === undefined ? report.totals : sumCounts(routes);
  const kept = report.examples.filter((e) => route === undefined || e.route === route).slice(0, examples);
  return { ...report, totals, routes, examples: kept };
}

function sumCounts(routes: Route[]): ShadowReport['totals'] {
  const sum = (field: keyof ShadowReport['totals']) => routes.reduce((total, r) => total + r[field], 0);
  return { compared: sum('compared'), equal: sum('equal'), different: sum('different'), legacySlow: sum('legacySlow'), legacyError: sum('legacyError'), dropped: sum('dropped') };
}

const routeRows = (report: ShadowReport) =>
  report.routes.map((r) => ({
    route: r.route,
    compared: r.compared,
    equal: r.equal,
    different: r.different,
    'legacy slow': r.legacySlow,
    'legacy failed': r.legacyError,
    dropped: r.dropped,
  }));

/** The differing field paths, most frequent first. */
const pathRows = (report: ShadowReport) =>
  report.routes
    .flatMap((r) => r.differences.map((d) => ({ route: r.route, path: d.path, kind: d.kind, count: d.count })))
    .sort((a, b) => b.count - a.count);

const valueChange = (d: ShadowReport['examples'][number]['differences'][number]) =>
  [d.legacy === undefined ? null : `v2 ${d.legacy}`, d.translated === undefined ? null : `gateway ${d.translated}`].filter(Boolean).join(' → ');

function exampleLines(report: ShadowReport, bullet: (text: string) => string): string[] {
  return report.examples.flatMap((e) => [
    bullet(`${e.at} ${e.route} (${e.path}, legacy key ${e.legacyKeyId})`),
    ...e.differences.map((d) => `    ${d.path} (${d.kind}): ${valueChange(d)}`),
    ...(e.moreDifferences > 0 ? [`    and ${e.moreDifferences} more difference(s)`] : []),
  ]);
}

function heading(report: ShadowReport): string {
  const { totals } = report;
  return `${totals.compared} answer(s) compared since ${report.since} at sample rate ${report.sampleRate}: ${totals.equal} equal, ${totals.different} different`;
}

export function renderShadowTable(report: ShadowReport, width: number, colour: boolean): string {
  const table = (rows: Record<string, unknown>[]) => renderTable(rows, width, colour).text.trimEnd();
  const paths = pathRows(report);
  return `${[
    style(colour, 'bold', 'Shadow check of the v2 translation against the legacy v2 API'),
    heading(report),
    '',
    table(routeRows(report)),
    ...(paths.length > 0 ? ['', style(colour, 'bold', 'Differing field paths'), table(paths)] : []),
    ...(report.examples.length > 0 ? ['', style(colour, 'bold', `Last ${report.examples.length} differing answer(s)`), ...exampleLines(report, (t) => t)] : []),
  ].join('\n')}\n`;
}

export function renderShadowMarkdown(report: ShadowReport): string {
  const paths = pathRows(report);
  return `${[
    '## Shadow check of the v2 translation',
    '',
    heading(report),
    '',
    ...markdownTable(routeRows(report)),
    ...(paths.length > 0 ? ['', '### Differing field paths', '', ...markdownTable(paths)] : []),
    ...(report.examples.length > 0 ? ['', '### Last differing answers', '', ...exampleLines(report, (t) => `- ${t}`)] : []),
  ].join('\n')}\n`;
}

function parseExamples(text: string): number {
  const examples = Number(text);
  if (!Number.isInteger(examples) || examples < 0) throw usageError(`--examples ${text}: give a whole number, 0 or more`);
  return examples;
}

async function runShadowReport(flags: ShadowFlags, globals: GlobalOptions, io: CliIo): Promise<ExitCode> {
  const format = chooseFormat(globals.format, REPORT_FORMATS);
  if (!(FAIL_ON as readonly string[]).includes(flags.failOn)) throw usageError(`--fail-on ${flags.failOn}: use ${FAIL_ON.join(' or ')}`);
  if (flags.route !== undefined && !/^[A-Z]+ \/\S*$/.test(flags.route)) throw usageError(`--route ${flags.route}: give a v2 route as "METHOD /path", such as "GET /employees"`);
  const examples = parseExamples(flags.examples);

  const { Session } = await import('../session.js');
  const envelope = await new Session({ ...globals, format: 'json' }, io).call({ method: 'GET', path: '/v4/admin/shadow-report' });
  const report = narrowReport(envelope.data as ShadowReport, flags.route, examples);
  if (!report.enabled) {
    io.stderr.write(messageLine('warning', 'the shadow check is off on this server: set LEGACY_V2_UPSTREAM (the legacy v2 API) and SHADOW_SAMPLE_RATE (above 0, at most 1)', io));
  } else if (flags.route !== undefined && report.routes.length === 0) {
    io.stderr.write(messageLine('warning', `--route ${flags.route}: no sampled call of this route yet (routes are written as in the v2 maps, such as "GET /employees/:id")`, io));
  }
  if (format === 'json') io.stdout.write(`${JSON.stringify({ ok: true, data: report, meta: {} }, null, 2)}\n`);
  else if (format === 'markdown') io.stdout.write(renderShadowMarkdown(report));
  else {
    const { width, colour } = reportLayout(format, io);
    io.stdout.write(renderShadowTable(report, width, colour));
  }

  if (flags.failOn === 'none') return EXIT.ok;
  // A gate passes only on evidence: nothing compared is no proof that the translation matches.
  if (report.totals.compared === 0) {
    io.stderr.write(messageLine('error', '--fail-on different: no answer was compared, so nothing proves the translation matches', io));
    return EXIT.failure;
  }
  return report.totals.different > 0 ? EXIT.failure : EXIT.ok;
}

export function registerShadowReportCommand(migrate: Command, io: CliIo, done: (code: ExitCode) => void): void {
  migrate
    .command('shadow-report')
    .description(
      'What the gateway’s shadow check found: per v2 route the sampled GETs compared with the legacy v2 API (equal, different, legacy slow or failed, dropped), the field paths that differed and the last differing answers (secret-like values masked). Needs an admin v4 key.',
    )
    .option('--route <route>', 'only this v2 route, as in the maps: "GET /employees/:id"')
    .option('--examples <n>', 'how many of the last differing answers to show', String(DEFAULT_EXAMPLES))
    .option('--fail-on <what>', 'different: exit 1 when a route had a difference or nothing was compared (a gate before a hostname switch); none', 'none')
    .addHelpText('after', '\nOutput: --format table (default, fitted to the terminal), json, text (the table report, never cut nor coloured) or markdown.\nExit codes: 0 ok, 1 differences under --fail-on different (or the API refused), 2 bad input, 4 not an admin.')
    .action(async (flags: ShadowFlags, command: Command) => {
      done(await runShadowReport(flags, command.optsWithGlobals<GlobalOptions>(), io));
    });
}
