import type { MigrationDeps } from '../deps.js';
import type { FastifyInstance } from 'fastify';
import { CAPABILITY_LABELS, type Capability } from '../../access/capabilities.js';
import { signedInCaller } from '../../access/principal.js';
import { buildMigrationPlan, type MigrationPlan, type PlanEndpoint } from '../migration-plan.js';
import { MIGRATION_READ } from '../operations/legacy-keys.js';
import { requireAccess } from '../../operations/operation.js';
import { requireUser, sendPage, type PageContext } from '../../pages/account-pages.js';
import { STAGE_LABELS } from './cutover-section.js';
import { html, type Html } from '../../kit/html.js';
import { prose } from './migration-guide.js';
import { brownoutBanner } from './brownout-notice.js';

/*
 * One integration's migration plan as a page for admins, linked from the migration dashboard:
 * /app/migration/keys/:id/plan, the same plan as GET /v4/admin/legacy-keys/:id/plan.
 */

const number = (n: number) => n.toLocaleString('en-US');
const codes = (items: readonly string[]) => html`${items.map((item, i) => html`${i > 0 ? ', ' : ''}<code>${item}</code>`)}`;
const capabilityList = (capabilities: readonly Capability[]) =>
  capabilities.length === 0 ? html`none` : html`${capabilities.map((c, i) => html`${i > 0 ? ', ' : ''}${CAPABILITY_LABELS[c]} <code>${c}</code>`)}`;

function endpointDetails(endpoint: PlanEndpoint): Html {
  const { changes, example } = endpoint;
  return html`<details><summary><code>${endpoint.endpoint}</code>: ${changes.length} field change(s)</summary>
${changes.length > 0 ? html`<ul>${changes.map((change) => html`<li>${change.direction === 'request' ? 'You send: ' : 'You get back: '}${prose(change.text)}</li>`)}</ul>` : html`<p>No field changes.</p>`}
${example && example.v4.length > 0 ? html`<pre><code>${example.v4.map((call) => call.curl).join('\n')}</code></pre>` : ''}
<p class="tools"><a href="${endpoint.guide}">The guide’s section</a></p></details>`;
}

function planBody(plan: MigrationPlan): Html {
  const { key, cutover, endpoints, staysOnV2, capabilities, totals, window } = plan;
  const summary = html`<section class="sunset" aria-labelledby="summary-heading"><h2 id="summary-heading">Summary</h2>
<p>Legacy key <code>${key.id}</code> of company <code>${key.companyId}</code>: <strong data-testid="total-calls">${number(totals.calls)}</strong> v2 calls since ${window.since}
(${number(totals.movable)} to endpoints with a v4 successor, ${number(totals.staying)} to endpoints that stay on v2).
v2 stops answering in <strong>${plan.sunset.daysLeft}</strong> days, on ${plan.sunset.at.slice(0, 10)} (UTC).</p>
<p>Stage: <strong data-stage="${cutover.stage}">${STAGE_LABELS[cutover.stage]}</strong>${cutover.nextStep ? html`. Next: ${cutover.nextStep}` : ''}.</p>
<ol class="tools" aria-label="Stages">${cutover.stages.map((s) => html`<li>${STAGE_LABELS[s.stage]}: ${s.at ? s.at.slice(0, 10) : '–'}</li>`)}</ol></section>`;

  const moves = html`<section aria-labelledby="moves-heading"><h2 id="moves-heading">Endpoints to move, most called first</h2>
${endpoints.length === 0
    ? html`<p>No call to an endpoint with a v4 successor since ${window.since}.</p>`
    : html`<table id="plan-endpoints"><thead><tr><th scope="col">v2 endpoint</th><th scope="col">Calls</th><th scope="col">Last day</th><th scope="col">v4 instead</th><th scope="col">Capability</th></tr></thead>
<tbody>${endpoints.map(
        (e) => html`<tr><td><a href="${e.guide}"><code>${e.endpoint}</code></a></td><td>${number(e.calls)}</td><td class="nowrap">${e.lastDay}</td>
<td>${e.successor.map((call, i) => html`${i > 0 ? html`<br>then ` : ''}<code>${call.method} ${call.path}</code>`)}</td><td>${codes(e.capabilities)}</td></tr>`,
      )}</tbody></table>${endpoints.map(endpointDetails)}`}</section>`;

  const staying = html`<section aria-labelledby="stays-heading"><h2 id="stays-heading">Stays on v2 (no v4 successor)</h2>
${staysOnV2.length === 0
    ? html`<p>Every endpoint this key called has a v4 successor.</p>`
    : html`<p>These calls cannot move; they stop at the sunset.</p><table id="plan-stays"><thead><tr><th scope="col">v2 endpoint</th><th scope="col">Calls</th><th scope="col">Why</th><th scope="col">Instead</th></tr></thead>
<tbody>${staysOnV2.map((e) => html`<tr><td><a href="${e.guide}"><code>${e.endpoint}</code></a></td><td>${number(e.calls)}</td><td>${e.reason}</td><td>${e.instead ?? ''}</td></tr>`)}</tbody></table>`}</section>`;

  const keyNeeds = html`<section aria-labelledby="capabilities-heading"><h2 id="capabilities-heading">The successor key’s capabilities</h2>
<p>Least set for what it called: ${capabilityList(capabilities.minimal)}.</p>
${capabilities.forLookups.length > 0 ? html`<p>Also, only if it sends a value v4 looks up: ${capabilityList(capabilities.forLookups)}.</p>` : ''}
<p class="tools">The non-personal user it acts as: <code>${plan.successorUser}</code>.</p></section>`;

  const checklist = html`<section aria-labelledby="steps-heading"><h2 id="steps-heading">Checklist</h2>
<ol id="plan-steps">${plan.steps.map(
    (step) => html`<li data-step="${step.id}" data-done="${String(step.done)}">${step.done ? '✓ ' : ''}${step.text}${step.command ? html`<pre><code>${step.command}</code></pre>` : ''}</li>`,
  )}</ol></section>`;

  return html`<div class="guide">${brownoutBanner(plan.sunset, new Date(plan.generatedAt))}${summary}${moves}${staying}${keyNeeds}${checklist}</div>
<p class="tools">Generated ${plan.generatedAt.slice(0, 16).replace('T', ' ')} UTC · <a href="/app/migration">Back to the dashboard</a> · as JSON with an admin API key: <code>GET /v4/admin/legacy-keys/${key.id}/plan</code> or <code>svc migrate plan --key ${key.id}</code></p>`;
}

export function registerMigrationPlanPage(app: FastifyInstance, ctx: PageContext<MigrationDeps>): void {
  app.get('/app/migration/keys/:id/plan', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    requireAccess(signedInCaller(user), MIGRATION_READ, 'A migration plan');
    const { id } = request.params as { id: string };
    const plan = await buildMigrationPlan(ctx.core, user.company_ids, id);
    return sendPage(reply, `Migration plan: ${plan.key.name}`, planBody(plan), user, ctx.sessions.csrfToken(request, reply));
  });
}
