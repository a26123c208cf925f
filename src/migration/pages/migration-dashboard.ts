import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CapabilitySchema } from '../../access/capabilities.js';
import { signedInCaller, type Caller, type UserRow } from '../../access/principal.js';
import type { MigrationDeps } from '../deps.js';
import { AppError, badRequest, unauthorized, validationError } from '../../kit/errors.js';
import { adminDisableLegacyKey, adminEnableLegacyKey, mintSuccessorKey, type Grantor } from '../cutover.js';
import { buildMigrationReport, type MigrationReport } from '../migration-report.js';
import { errorHandler, sendError } from '../../http/errors.js';
import { notePrincipal } from '../../http/request-log.js';
import { DisableLegacyKeyInput, MIGRATION_READ, MIGRATION_WRITE } from '../operations/legacy-keys.js';
import { requireAccess } from '../../operations/operation.js';
import { shadowCheckOf, type ShadowReport } from '../shadow-check.js';
import { disableCommand, forcedDisableCommand } from '../../legacy/reissue-steps.js';
import { formList, requireUser, sendPage, type PageContext } from '../../pages/account-pages.js';
import { html, type Html } from '../../kit/html.js';
import { shadowSection } from './shadow-section.js';
import { cutoverSection, mintedSuccessorNotice } from './cutover-section.js';
import { brownoutBanner } from './brownout-notice.js';

/*
 * The migration dashboard for admins and ops: v2 traffic over the last 30 days as inline SVG
 * charts (no script: the pages' CSP allows none), what is still called, what cannot move yet,
 * which keys can go, each key's cutover to its successor v4 key (with the admin's forms), and the
 * days to the sunset. /app/migration.json serves the same report, to the session or an admin API key.
 * Both read and change what the /v4/admin/legacy-keys operations do, under the same access rules.
 */

const REPORT_DAYS = 30;

/** Line colours, each at least 4.5:1 against white, told apart by dash pattern too. */
const SERIES_STYLES = [
  { colour: '#1f5fbf', dash: '' },
  { colour: '#b3261e', dash: '8 4' },
  { colour: '#1b7f3b', dash: '2 3' },
  { colour: '#6f42b0', dash: '10 3 2 3' },
  { colour: '#8a5300', dash: '4 4' },
];
const styleOf = (i: number) => SERIES_STYLES[i % SERIES_STYLES.length]!;

const number = (n: number) => n.toLocaleString('en-US');

/** As list_legacy_keys: human admins whose credential reads company data, over their own companies. */
async function reportFor(core: MigrationDeps, caller: Caller): Promise<MigrationReport & { shadow: ShadowReport }> {
  requireAccess(caller, MIGRATION_READ, 'The migration dashboard');
  const report = await buildMigrationReport(core, { companyIds: caller.companyIds, days: REPORT_DAYS });
  return { ...report, shadow: shadowCheckOf(core).report(caller.companyIds) };
}

/** 1, 2 or 5 times a power of ten: round axis steps. */
function niceCeiling(value: number): number {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 5, 10].map((m) => m * power).find((step) => step >= value))!;
}

interface Series {
  label: string;
  values: number[];
}

/** A multi-line chart: one line per series over the report's days, with axes and gridlines. */
function lineChart(id: string, title: string, description: string, days: string[], series: Series[]): Html {
  const [width, height, left, right, top, bottom] = [720, 260, 52, 16, 12, 30];
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const max = niceCeiling(Math.max(0, ...series.flatMap((s) => s.values)));
  const x = (i: number) => left + (days.length > 1 ? (i * plotWidth) / (days.length - 1) : plotWidth / 2);
  const y = (value: number) => top + plotHeight - (value / max) * plotHeight;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(f * max)).filter((v, i, all) => all.indexOf(v) === i);
  const grid = ticks.map(
    (value) => html`<line x1="${left}" x2="${width - right}" y1="${y(value)}" y2="${y(value)}" stroke="#d0d4db" stroke-width="1"/>
<text x="${left - 6}" y="${y(value) + 4}" text-anchor="end" font-size="11" fill="#3d4450">${number(value)}</text>`,
  );
  // A label every week, ending on today.
  const labels = days.map((day, i) =>
    (days.length - 1 - i) % 7 === 0 ? html`<text x="${x(i)}" y="${height - 10}" text-anchor="middle" font-size="11" fill="#3d4450">${day.slice(5)}</text>` : '',
  );
  const lines = series.map((s, i) => {
    const { colour, dash } = styleOf(i);
    const points = s.values.map((value, d) => `${x(d).toFixed(1)},${y(value).toFixed(1)}`).join(' ');
    return html`<polyline points="${points}" fill="none" stroke="${colour}" stroke-width="2.5" stroke-linejoin="round"${dash ? html` stroke-dasharray="${dash}"` : ''}/>`;
  });
  return html`<svg class="chart" id="${id}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-title ${id}-desc" xmlns="http://www.w3.org/2000/svg">
<title id="${id}-title">${title}</title><desc id="${id}-desc">${description}</desc>
${grid}<line x1="${left}" x2="${left}" y1="${top}" y2="${top + plotHeight}" stroke="#3d4450" stroke-width="1"/>${labels}${lines}</svg>
${legend(series)}`;
}

function legend(series: Series[]): Html {
  return html`<ul class="legend" aria-label="Legend">${series.map((s, i) => {
    const { colour, dash } = styleOf(i);
    return html`<li><svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" y2="5" stroke="${colour}" stroke-width="3"${dash ? html` stroke-dasharray="${dash}"` : ''}/></svg> ${s.label}</li>`;
  })}</ul>`;
}

/** A key's calls per day as small bars; its numbers are in the data table. */
function sparkline(name: string, values: number[]): Html {
  const [barWidth, step, height] = [4, 5, 28];
  const max = Math.max(1, ...values);
  const bars = values.map((value, i) => {
    if (value === 0) return '';
    const barHeight = Math.max(1, (value / max) * height);
    return html`<rect x="${i * step}" y="${(height - barHeight).toFixed(1)}" width="${barWidth}" height="${barHeight.toFixed(1)}" fill="#1f5fbf"/>`;
  });
  const total = values.reduce((a, b) => a + b, 0);
  return html`<svg class="spark" width="${values.length * step}" height="${height}" role="img" aria-label="${name}: calls per day, ${number(total)} in ${values.length} days">
<line x1="0" x2="${values.length * step}" y1="${height - 0.5}" y2="${height - 0.5}" stroke="#8a919c" stroke-width="1"/>${bars}</svg>`;
}

/** A quiet key whose successor does not work yet is refused a plain disable: the table gives the forced one. */
const quietKeyDisable = (key: MigrationReport['keys'][number]) =>
  key.cutover.stage === 'v2_quiet' ? disableCommand(key.id) : forcedDisableCommand(key.id, 'quiet, and its integration is gone');

function dashboardBody(report: MigrationReport & { shadow: ShadowReport }, csrfToken: string): Html {
  const companyName = new Map(report.companies.map((company) => [company.id, company.name]));
  const quiet = report.keys.filter((key) => key.quiet);
  const sunsetDay = report.sunset.at.slice(0, 10);
  const description = `Calls per day to the v2 API from ${report.days[0]} to ${report.days.at(-1)}, one line per company: ${report.companies
    .map((company) => `${company.name} ${number(company.total)} calls`)
    .join(', ')}.`;

  const sunset = html`<section aria-labelledby="sunset-heading" class="sunset"><h2 id="sunset-heading">Days to sunset</h2>
<p class="big" data-testid="days-to-sunset">${report.sunset.daysLeft}</p>
<p>${report.sunset.daysLeft > 0 ? `v2 stops answering on ${sunsetDay} (UTC).` : `v2 reached its sunset on ${sunsetDay} (UTC).`}
${report.companies.reduce((sum, company) => sum + company.total, 0) > 0 ? 'v2 is still called: see below what is left to migrate.' : `No v2 call in the last ${report.days.length} days.`}</p></section>`;

  const traffic = html`<section aria-labelledby="traffic-heading"><h2 id="traffic-heading">v2 traffic per company</h2>
${lineChart('company-traffic', 'v2 calls per day, by company', description, report.days, report.companies.map((c) => ({ label: c.name, values: c.callsPerDay })))}
<h3>Per legacy key</h3>
<table id="keys"><thead><tr><th scope="col">Key</th><th scope="col">Company</th><th scope="col">Last ${report.days.length} days</th><th scope="col">Calls</th><th scope="col">Last call (UTC)</th><th scope="col">Status</th></tr></thead>
<tbody>${report.keys.map(
    (key) => html`<tr><td>${key.name}<br><code>${key.id}</code></td><td>${companyName.get(key.companyId) ?? key.companyId}</td>
<td>${sparkline(key.name, key.callsPerDay)}</td><td>${number(key.total)}</td>
<td class="nowrap">${key.lastUsedAt ? key.lastUsedAt.slice(0, 16).replace('T', ' ') : 'never'}</td><td>${key.disabled ? 'disabled' : key.quiet ? 'quiet' : 'active'}</td></tr>`,
  )}</tbody></table>
<details><summary>Calls per day as a table</summary>
<table id="traffic-table"><thead><tr><th scope="col">Day (UTC)</th>${report.companies.map((c) => html`<th scope="col">${c.name}</th>`)}${report.keys.map((k) => html`<th scope="col">${k.name}</th>`)}</tr></thead>
<tbody>${report.days.map(
    (day, i) => html`<tr><th scope="row" class="nowrap">${day}</th>${report.companies.map((c) => html`<td>${number(c.callsPerDay[i]!)}</td>`)}${report.keys.map((k) => html`<td>${number(k.callsPerDay[i]!)}</td>`)}</tr>`,
  )}</tbody></table></details></section>`;

  const endpoints = html`<section aria-labelledby="endpoints-heading"><h2 id="endpoints-heading">Endpoints still called</h2>
${report.endpoints.length === 0
    ? html`<p>No v2 endpoint was called in the last ${report.days.length} days.</p>`
    : html`<table id="endpoints"><thead><tr><th scope="col">Endpoint</th><th scope="col">Scope</th><th scope="col">Calls</th><th scope="col">Last day</th></tr></thead>
<tbody>${report.endpoints.map((e) => html`<tr><td><code>${e.endpoint}</code></td><td><code>${e.scope}</code></td><td>${number(e.calls)}</td><td class="nowrap">${e.lastDay}</td></tr>`)}</tbody></table>`}</section>`;

  const noSuccessor = html`<section aria-labelledby="no-successor-heading"><h2 id="no-successor-heading">Scopes without a v4 successor still in use</h2>
${report.noSuccessorInUse.length === 0
    ? html`<p>Every scope still called has a v4 successor.</p>`
    : html`<p>These calls cannot move to v4; they must end, or be replaced, before the sunset.</p>
<table id="no-successor"><thead><tr><th scope="col">Scope</th><th scope="col">Why</th><th scope="col">Calls</th><th scope="col">Keys</th></tr></thead>
<tbody>${report.noSuccessorInUse.map((s) => html`<tr><td><code>${s.scope}</code></td><td>${s.reason ?? ''}</td><td>${number(s.calls)}</td><td>${s.keyIds.map((id) => html`<code>${id}</code> `)}</td></tr>`)}</tbody></table>`}</section>`;

  const quietKeys = html`<section aria-labelledby="quiet-heading"><h2 id="quiet-heading">Keys that went quiet</h2>
${quiet.length === 0
    ? html`<p>Every active key was used in the last ${report.cutover.quietDays} days.</p>`
    : html`<p>No call in ${report.cutover.quietDays} days: candidates to disable. Disabling takes effect on the next request.</p>
<table id="quiet-keys"><thead><tr><th scope="col">Key</th><th scope="col">Company</th><th scope="col">Last call (UTC)</th><th scope="col">Disable with</th></tr></thead>
<tbody>${quiet.map((key) => html`<tr><td>${key.name}</td><td>${companyName.get(key.companyId) ?? key.companyId}</td>
<td class="nowrap">${key.lastUsedAt ? key.lastUsedAt.slice(0, 10) : 'never'}</td><td><code>${quietKeyDisable(key)}</code></td></tr>`)}</tbody></table>`}</section>`;

  return html`<div class="dashboard">${brownoutBanner(report.sunset, new Date(report.generatedAt))}${sunset}${traffic}${cutoverSection(report, csrfToken)}${endpoints}${noSuccessor}${quietKeys}${shadowSection(report.shadow)}</div>
<p class="tools">Generated ${report.generatedAt.slice(0, 16).replace('T', ' ')} UTC · the same report as JSON: <a href="/app/migration.json">/app/migration.json</a> · for integration owners: <a href="/docs/migration">the migration guide</a></p>`;
}

export function registerMigrationDashboard(app: FastifyInstance, ctx: PageContext<MigrationDeps>): void {
  const { core, sessions } = ctx;

  app.get('/app/migration', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    const report = await reportFor(core, signedInCaller(user));
    const csrfToken = sessions.csrfToken(request, reply);
    return sendPage(reply, 'v2 migration', dashboardBody(report, csrfToken), user, csrfToken);
  });

  /** The signed-in admin of a cutover form, its CSRF token checked; the forms change what the admin operations do. */
  const formAdmin = async (request: FastifyRequest): Promise<{ user: UserRow; caller: Caller; admin: Grantor }> => {
    const user = await sessions.currentUser(request);
    if (!user) throw unauthorized('not_signed_in', 'Sign in at /app/sign-in first');
    sessions.checkCsrf(request);
    const caller = signedInCaller(user);
    requireAccess(caller, MIGRATION_WRITE, 'Changing a legacy key’s cutover');
    return { user, caller, admin: { ...caller, userId: user.id, email: user.email } };
  };

  // The new key is shown once, above the dashboard; reloading the page never shows it again.
  app.post('/app/migration/keys/:id/successor', async (request, reply) => {
    const { user, caller, admin } = await formAdmin(request);
    const { id } = request.params as { id: string };
    const form = request.body as Record<string, unknown>;
    const requested = z.array(CapabilitySchema).safeParse(formList(form.capabilities));
    if (!requested.success) throw validationError(requested.error, 'capabilities');
    if (requested.data.length === 0) throw badRequest('no_capabilities', 'Tick at least one capability for the successor key');
    const minted = await mintSuccessorKey(core, id, admin, { capabilities: requested.data, replace: form.replace === 'true' });
    const csrfToken = sessions.csrfToken(request, reply);
    const body = html`${mintedSuccessorNotice(minted)}${dashboardBody(await reportFor(core, caller), csrfToken)}`;
    return sendPage(reply, 'v2 migration', body, user, csrfToken, 201);
  });

  // The disable and its undo, recorded as this admin's from the dashboard. A forced disable takes the
  // admin's reason, checked as the API checks it; a refused one is shown above the dashboard.
  app.post('/app/migration/keys/:id/disable', async (request, reply) => {
    const { user, caller, admin } = await formAdmin(request);
    const { id } = request.params as { id: string };
    const form = request.body as Record<string, unknown>;
    const parsed = DisableLegacyKeyInput.safeParse({
      id,
      ...(form.force === 'true' ? { force: true } : {}),
      ...(typeof form.reason === 'string' && form.reason.trim() !== '' ? { reason: form.reason } : {}),
    });
    if (!parsed.success) throw validationError(parsed.error, 'disable form');
    const { force, reason = `disabled by ${user.email} on the dashboard` } = parsed.data;
    try {
      await adminDisableLegacyKey(core, id, admin, { force, reason });
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'legacy_key_in_use') throw error;
      const csrfToken = sessions.csrfToken(request, reply);
      const body = html`<p class="error" role="alert">${error.message}</p>${dashboardBody(await reportFor(core, caller), csrfToken)}`;
      return sendPage(reply, 'v2 migration', body, user, csrfToken, error.status);
    }
    return reply.redirect('/app/migration', 303);
  });
  app.post('/app/migration/keys/:id/enable', async (request, reply) => {
    const { user, admin } = await formAdmin(request);
    const { id } = request.params as { id: string };
    await adminEnableLegacyKey(core, id, admin, `enabled again by ${user.email} on the dashboard`);
    return reply.redirect('/app/migration', 303);
  });

  app.get(
    '/app/migration.json',
    {
      // Automation reads failures in the v4 error envelope, not as a page.
      errorHandler: errorHandler({ send: sendError, failed: 'migration report failed' }),
    },
    async (request) => {
      if (request.headers['x-api-key'] !== undefined) {
        const principal = await core.auth.authenticate(request.headers);
        notePrincipal(request, principal);
        return reportFor(core, principal);
      }
      const user = await sessions.currentUser(request);
      if (!user) throw unauthorized('not_signed_in', 'Sign in at /app/sign-in first, or send an admin API key in X-API-KEY');
      return reportFor(core, signedInCaller(user));
    },
  );
}
