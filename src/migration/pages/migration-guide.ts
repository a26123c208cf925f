import type { FastifyInstance } from 'fastify';
import { baseUrlOf } from '../../kit/config.js';
import type { MigrationDeps } from '../deps.js';
import { buildMigrationGuide, type ExampleCall, type FieldChange, type GuideEndpoint, type MigrationGuide } from '../migration-guide.js';
import { sendPage } from '../../pages/account-pages.js';
import { html, type Html } from '../../kit/html.js';

/*
 * The v2 → v4 migration guide for integration owners, public like the API docs: /docs/migration
 * as a page, /docs/migration.json as data. Both come from the maps (see gateway/migration-guide.ts).
 */

export const GUIDE_PATH = '/docs/migration';

/** A sentence of the guide: `backticked` parts become code. */
export const prose = (text: string): Html => html`${text.split('`').map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;

const day = (iso: string) => iso.slice(0, 10);
const utc = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

function changeList(title: string, changes: FieldChange[]): Html | '' {
  if (changes.length === 0) return '';
  return html`<h3>${title}</h3><ul>${changes.map((change) => html`<li>${prose(change.text)}</li>`)}</ul>`;
}

const curlBlock = (label: string, calls: ExampleCall[]) =>
  html`<p class="tools">${label}</p><pre><code>${calls.map((call) => call.curl).join('\n')}</code></pre>`;

function endpointSection(endpoint: GuideEndpoint, sunsetDay: string): Html {
  const { anchor, method, path, scope, successor, capabilities, lookupCapabilities, note, noSuccessor, changes, example } = endpoint;
  const replacement = noSuccessor
    ? html`<p class="notice"><strong>No v4 successor:</strong> ${noSuccessor.reason}. The gateway forwards these calls to the legacy v2 service until the sunset on ${sunsetDay}; then they stop.${noSuccessor.instead ? html` Instead: ${noSuccessor.instead}.` : ''}</p>`
    : html`<p><strong>In v4:</strong> ${successor.map(
        (call, i) => html`${i > 0 ? ', then ' : ''}<code>${call.method} ${call.path}</code> (<code>${call.operation}</code>, ${call.title.toLowerCase()})`,
      )}.<br><strong>Capability:</strong> ${capabilities.map((cap, i) => html`${i > 0 ? ', ' : ''}<code>${cap}</code>`)}${lookupCapabilities.length > 0
        ? html`, and ${lookupCapabilities.map((cap, i) => html`${i > 0 ? ', ' : ''}<code>${cap}</code>`)} for the lookup below`
        : ''}.</p>`;
  const exampleBlock = example
    ? html`<h3>Example</h3>${example.variables.length > 0 ? html`<p>Set ${example.variables.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`)} to ids from your data.</p>` : ''}
${curlBlock('v2 (today)', [example.v2])}${example.v4.length > 0 ? curlBlock('v4 (instead)', example.v4) : ''}`
    : '';
  return html`<section id="${anchor}" aria-labelledby="${anchor}-heading"><h2 id="${anchor}-heading"><code>${method} ${path}</code></h2>
<p class="tools">v2 scope <code>${scope}</code></p>${replacement}${note ? html`<p class="tools">${note}</p>` : ''}
${changeList('What you send', changes.filter((c) => c.direction === 'request'))}${changeList('What you get back', changes.filter((c) => c.direction === 'response'))}${exampleBlock}</section>`;
}

export function migrationGuideBody(guide: MigrationGuide, baseUrl: string): Html {
  const sunsetDay = day(guide.sunset);
  const brownouts = guide.brownouts.map(({ start, end }) => html`<li>${utc(start)} to ${utc(end)}</li>`);
  const intro = html`<section class="sunset" aria-labelledby="when-heading"><h2 id="when-heading">When</h2>
<p>API v2 is deprecated since ${day(guide.deprecation)} and stops answering on <strong>${sunsetDay}</strong> (UTC).${brownouts.length > 0 ? ' Before that it answers 410 Gone during these brownouts:' : ''}</p>
${brownouts.length > 0 ? html`<ul>${brownouts}</ul>` : ''}
<p class="tools">Generated from the gateway’s own maps. The same guide as JSON: <a href="${GUIDE_PATH}.json">${GUIDE_PATH}.json</a> · the v2 API as OpenAPI: <a href="/openapi-v2.json">/openapi-v2.json</a> · the API docs: <a href="/docs">/docs</a></p></section>`;

  const start = html`<section aria-labelledby="start-heading"><h2 id="start-heading">Before you start</h2>
<ol><li>Read your key’s own plan with the v2 key you have: <code>curl -sS "$BASE_URL${guide.ownerPlan}" -H "X-API-KEY: $V2_KEY"</code>. It lists the endpoints your key called and their v4 calls, its stage and next step, the brownouts ahead, and the admins of your company (<code>ask.admins</code>).</li>
<li>Ask one of those admins for your <strong>successor v4 key</strong>. They mint it on the migration dashboard (<code>/app/migration</code>) or with <code>svc legacy-keys mint-successor &lt;your key id&gt;</code>: it acts as a dedicated non-personal user with only the capabilities your calls need, is linked to your v2 key, and is shown to them once.</li>
<li>Send the v4 key in <code>X-API-KEY</code>; check it with <code>GET /v4/me</code>.</li>
<li>Change each call as its section says, list paging first: v4 lists answer pages of at most ${guide.pageSize} records.</li>
<li>Keep the v2 key active until your plan shows the successor working and v2 quiet; then the admin disables it.</li></ol>
<p>The examples run in bash with curl, and jq where one call’s answer feeds the next. Set first:</p>
<pre><code>BASE_URL=${baseUrl}
V2_KEY='your v2 key'
V4_KEY='svc_sk_… your v4 key'</code></pre></section>`;

  const table = html`<section aria-labelledby="endpoints-heading" id="endpoints"><h2 id="endpoints-heading">Every v2 endpoint</h2>
<table><thead><tr><th scope="col">v2 endpoint</th><th scope="col">v4 call</th><th scope="col">Capability</th></tr></thead>
<tbody>${guide.endpoints.map(
    (e) => html`<tr><td><a href="#${e.anchor}"><code>${e.method} ${e.path}</code></a></td>
<td>${e.noSuccessor ? 'none: stays on v2' : e.successor.map((call, i) => html`${i > 0 ? html`<br>then ` : ''}<code>${call.method} ${call.path}</code>`)}</td>
<td>${e.capabilities.map((cap, i) => html`${i > 0 ? html`<br>` : ''}<code>${cap}</code>`)}</td></tr>`,
  )}</tbody></table></section>`;

  return html`<div class="guide">${intro}${start}${table}${guide.endpoints.map((endpoint) => endpointSection(endpoint, sunsetDay))}</div>`;
}

export function registerMigrationGuide(app: FastifyInstance, core: MigrationDeps): void {
  // The maps do not change while the process runs: built once, so a faulty example fails the start.
  const guide = buildMigrationGuide(core.mappings);
  const body = migrationGuideBody(guide, baseUrlOf(core.config));
  app.get(GUIDE_PATH, async (_request, reply) => sendPage(reply, 'Migrating from API v2 to v4', body));
  app.get(`${GUIDE_PATH}.json`, async () => guide);
}
