import { renderTable, style } from '../output.js';
import type { AuditReport, ScopeFinding } from './report.js';

function usageCell(finding: ScopeFinding): string {
  if (finding.calls === null) return '';
  const last = finding.lastCalled ? ` (last ${finding.lastCalled})` : '';
  return `${finding.calls > 0 ? finding.calls : 'none'}${last}`;
}

function statusCell(finding: ScopeFinding): string {
  if (finding.ignored) return `${finding.status} (ignored)`;
  if (finding.toDrop && finding.failsOn.length === 0) return `${finding.status} (drop)`;
  return finding.failsOn.length > 0 ? `${finding.status} ✗` : finding.status;
}

/** Columns in order of importance, so a narrow table keeps the usage and drops the endpoints first. */
function rows(report: AuditReport, withNotes: boolean) {
  return report.scopes.map((f) => ({
    scope: f.scope,
    ...(report.windowDays === null ? {} : { [`calls in ${report.windowDays} d`]: usageCell(f) }),
    status: statusCell(f),
    capability: f.capability ?? '— (stays on v2)',
    endpoints: f.endpoints.join(', '),
    ...(withNotes ? { notes: f.comment ?? '' } : {}),
  }));
}

function title(report: AuditReport): string {
  return report.key ? `legacy key ${report.key.id} "${report.key.name}" (${report.key.companyId})` : report.source;
}

/** The line that flags a key not worth a migration as it stands: retired (disabled) or quiet (no call in the window). */
function keyStateLine(report: AuditReport): string[] {
  if (report.keyState === 'retired') return [`Retired: this v2 key was disabled on ${report.key!.disabledAt!.slice(0, 10)}`];
  if (report.keyState === 'quiet') {
    const last = report.key?.lastUsedAt ? `last call ${report.key.lastUsedAt.slice(0, 10)}` : 'never called';
    return [`Quiet: this v2 key made no call in the last ${report.windowDays} days (${last})`];
  }
  return [];
}

/** Which concrete scopes each held wildcard (api.orders.*) grants. */
function wildcardLines(report: AuditReport): string[] {
  const wildcards = [...new Set(report.scopes.flatMap((f) => (f.grantedAs ? [f.grantedAs] : [])))];
  return wildcards.map((w) => `${w} grants: ${report.scopes.filter((f) => f.grantedAs === w).map((f) => f.scope).join(', ')}`);
}

function verdict(report: AuditReport): string {
  const failOn = report.failOn.length > 0 ? report.failOn.join(', ') : 'nothing';
  return report.findings.length > 0
    ? `${report.findings.length} finding(s) under --fail-on ${failOn}: ${report.findings.join(', ')}`
    : `Clean under --fail-on ${failOn}`;
}

export function renderTableReport(report: AuditReport, width: number, colour: boolean): string {
  const { summary } = report;
  const table = renderTable(rows(report, false), width, colour);
  const lines = [
    style(colour, 'bold', `v2 → v4 scope audit of ${title(report)}, as of ${report.asOf}`),
    ...keyStateLine(report).map((line) => style(colour, 'yellow', line)),
    '',
    table.text.trimEnd(),
    ...(table.hidden.length > 0 ? [`(${table.hidden.join(', ')}: hidden to fit ${width} columns; --format text, markdown or json shows them)`] : []),
    '',
    ...wildcardLines(report),
    ...report.scopes.filter((f) => f.comment).map((f) => `${f.scope}: ${f.comment}`),
    '',
    `Minimal v4 capabilities: ${summary.capabilities.join(', ') || '(none)'}`,
    ...(summary.unusedScopes.length > 0 ? [`Granted but never used (drop them): ${summary.unusedScopes.join(', ')}`] : []),
    ...(summary.review.length > 0 ? [`Review (v4 grants more): ${summary.review.join(', ')}`] : []),
    ...(summary.stayOnV2.length > 0 ? [`Stay on v2 (no v4 successor): ${summary.stayOnV2.join(', ')}`] : []),
    '',
    'Reissue steps:',
    ...summary.checklist.map((step, i) => `  ${i + 1}. ${step}`),
    '',
    `v2 sunset: ${summary.sunset}, ${summary.daysToSunset} day(s) left`,
    ...(summary.brownoutNotice === null ? [] : [style(colour, 'yellow', summary.brownoutNotice)]),
    style(colour, report.findings.length > 0 ? 'red' : 'bold', verdict(report)),
  ];
  return `${lines.join('\n')}\n`;
}

const escape = (text: string) => text.replace(/\|/g, '\\|');

/** A markdown table of records, headed by the first record's fields. */
export function markdownTable(records: Record<string, unknown>[]): string[] {
  const header = Object.keys(records[0] ?? {});
  if (header.length === 0) return ['(none)'];
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...records.map((row) => `| ${Object.values(row).map((v) => escape(String(v))).join(' | ')} |`),
  ];
}

export function renderMarkdownReport(report: AuditReport): string {
  const { summary } = report;
  const list = (items: string[]) => (items.length > 0 ? items.map((s) => `\`${s}\``).join(', ') : 'none');
  return [
    `## v2 → v4 scope audit: ${title(report)}`,
    '',
    `As of ${report.asOf}; the v2 API ends on ${summary.sunset} (**${summary.daysToSunset} days left**).`,
    ...(summary.brownoutNotice === null ? [] : [`\n**${summary.brownoutNotice}**`]),
    ...keyStateLine(report).map((line) => `\n**${line}**`),
    ...wildcardLines(report).map((line) => `\n${line}`),
    '',
    ...markdownTable(rows(report, true)),
    '',
    '### Summary',
    '',
    `- Minimal v4 capabilities: ${list(summary.capabilities)}`,
    `- Granted but never used (drop them): ${report.windowDays === null ? 'unknown without usage (audit with --key)' : list(summary.unusedScopes)}`,
    `- Review, v4 grants more: ${list(summary.review)}`,
    `- Stay on v2, no v4 successor: ${list(summary.stayOnV2)}`,
    `- ${verdict(report)}`,
    '',
    '### Reissue checklist',
    '',
    ...summary.checklist.map((step) => `- [ ] ${step}`),
    '',
  ].join('\n');
}
