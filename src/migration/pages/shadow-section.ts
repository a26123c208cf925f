import type { ShadowReport } from '../shadow-check.js';
import { html, type Html } from '../../kit/html.js';

/*
 * The migration dashboard's section on the shadow check: per v2 route, how the translation
 * compared with the legacy v2 API on sampled GETs, the field paths that differed, and the last
 * differing answers (values shortened and masked by the check itself).
 */

const number = (n: number) => n.toLocaleString('en-US');
const minute = (iso: string) => iso.slice(0, 16).replace('T', ' ');

function routesTable(report: ShadowReport): Html {
  return html`<table id="shadow-routes"><thead><tr><th scope="col">v2 route</th><th scope="col">Compared</th><th scope="col">Equal</th><th scope="col">Different</th><th scope="col">Legacy slow</th><th scope="col">Legacy failed</th><th scope="col">Dropped</th><th scope="col">Differing fields</th></tr></thead>
<tbody>${report.routes.map(
    (r) => html`<tr><td><code>${r.route}</code></td><td>${number(r.compared)}</td><td>${number(r.equal)}</td><td>${number(r.different)}</td><td>${number(r.legacySlow)}</td><td>${number(r.legacyError)}</td><td>${number(r.dropped)}</td>
<td>${r.differences.map((d) => html`<code>${d.path}</code> ${d.kind} ×${number(d.count)}<br>`)}</td></tr>`,
  )}</tbody></table>`;
}

function examplesTable(report: ShadowReport): Html {
  if (report.examples.length === 0) return html`<p>No differing answer kept.</p>`;
  return html`<details><summary>Last differing answers (${report.examples.length})</summary>
<table id="shadow-examples"><thead><tr><th scope="col">When (UTC)</th><th scope="col">Call</th><th scope="col">Field</th><th scope="col">v2 answered</th><th scope="col">Translation answered</th></tr></thead>
<tbody>${report.examples.map((example) =>
    example.differences.map(
      (d, i) => html`<tr>${i === 0 ? html`<td class="nowrap" rowspan="${example.differences.length}">${minute(example.at)}</td><td rowspan="${example.differences.length}"><code>${example.path}</code><br><code>${example.legacyKeyId}</code>${example.moreDifferences > 0 ? html`<br>and ${number(example.moreDifferences)} more` : ''}</td>` : ''}
<td><code>${d.path}</code> (${d.kind})</td><td><code>${d.legacy ?? '—'}</code></td><td><code>${d.translated ?? '—'}</code></td></tr>`,
    ),
  )}</tbody></table></details>`;
}

export function shadowSection(report: ShadowReport): Html {
  const body = !report.enabled
    ? html`<p>Off. Set <code>LEGACY_V2_UPSTREAM</code> and <code>SHADOW_SAMPLE_RATE</code> (for example 0.05) to compare a sample of the translated v2 reads with the legacy v2 API before its hostname moves to the gateway.</p>`
    : report.routes.length === 0
      ? html`<p>On (sample rate ${report.sampleRate}); no sampled v2 read of your companies since ${minute(report.since)} UTC.</p>`
      : html`<p>Sample rate ${report.sampleRate}; since ${minute(report.since)} UTC on this instance: ${number(report.totals.compared)} compared, ${number(report.totals.different)} different,
${number(report.totals.legacySlow + report.totals.legacyError)} where the legacy API was slow or failed.</p>
${routesTable(report)}${examplesTable(report)}`;
  return html`<section aria-labelledby="shadow-heading"><h2 id="shadow-heading">Shadow check of the translation</h2>
${body}<p>As JSON for automation: <code>GET /v4/admin/shadow-report</code> (<code>svc gateway shadow-report</code>).</p></section>`;
}
