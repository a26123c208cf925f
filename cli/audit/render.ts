import { renderTable, style } from '../output.js';
import type { AuditReport, ScopeFinding } from './report.js';

export const AUDIT_FORMATS = ['table', 'json', 'markdown'] as const;
export type AuditFormat = (typeof AUDIT_FORMATS)[number];

function usageCell(finding: ScopeFinding): string {
  if (finding.calls === null) return '';
  const last = finding.lastCalled ? ` (last ${finding.lastCalled})` : '';
  return `${finding.calls > 0 ? finding.calls : 'none'}${last}`;
}

function statusCell(finding: ScopeFinding): string {
  if (finding.ignored) return `${finding.status} (ignored)`;
  return finding.failsOn.length > 0 ? `${finding.status} ✗` : finding.status;
}

function rows(report: AuditReport, withNotes: boolean) {
  return report.scopes.map((f) => ({
    scope: f.scope,
    status: statusCell(f),
    capability: f.capability ?? '— (stays on v2)',
    ...(report.windowDays === null ? {} : { [`calls in ${report.windowDays} d`]: usageCell(f) }),
    endpoints: f.endpoints.join(', '),
    ...(withNotes ? { notes: f.comment ?? '' } : {}),
  }));
}

function title(report: AuditReport): string {
  return report.key ? `legacy key ${report.key.id} "${report.key.name}" (${report.key.companyId})` : report.source;
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
    '',
    table.text.trimEnd(),
    ...(table.hidden.length > 0 ? [`(${table.hidden.join(', ')}: hidden to fit ${width} columns; --format markdown or json shows them)`] : []),
    '',
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
    style(colour, report.findings.length > 0 ? 'red' : 'bold', verdict(report)),
  ];
  return `${lines.join('\n')}\n`;
}

const escape = (text: string) => text.replace(/\|/g, '\\|');

export function renderMarkdownReport(report: AuditReport): string {
  const table = rows(report, true);
  const header = Object.keys(table[0] ?? { scope: '' });
  const { summary } = report;
  const list = (items: string[]) => (items.length > 0 ? items.map((s) => `\`${s}\``).join(', ') : 'none');
  return [
    `## v2 → v4 scope audit: ${title(report)}`,
    '',
    `As of ${report.asOf}; the v2 API ends on ${summary.sunset} (**${summary.daysToSunset} days left**).`,
    '',
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...table.map((row) => `| ${Object.values(row).map((v) => escape(String(v))).join(' | ')} |`),
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
