import { CAPABILITY_LABELS } from '../../access/capabilities.js';
import { missingBeforeDisable, type MintedSuccessor } from '../cutover.js';
import type { CutoverAction, CutoverEvent } from '../../legacy/cutover-events.js';
import { CUTOVER_STAGES, type CutoverStage } from '../../legacy/cutover-stage.js';
import type { MigrationReport } from '../migration-report.js';
import { html, type Html } from '../../kit/html.js';

/*
 * The migration dashboard's cutover section: each legacy key's stage on the way to its successor v4
 * key with the dates, and the admin's forms for the next step (mint the successor, replace it,
 * disable the quiet key, or force the disable of one not yet quiet with a reason; undo a disable
 * until the sunset); then the keys the automatic policy disabled, with date and reason, and the
 * latest cutover events (who did what to which key, when and why).
 */

type ReportKey = MigrationReport['keys'][number];

export const STAGE_LABELS: Record<CutoverStage, string> = {
  v2_only: 'v2 only',
  successor_minted: 'successor minted',
  successor_working: 'successor working',
  v2_unmovable_only: 'v2 calls without successor left',
  v2_quiet: 'v2 quiet',
  v2_disabled: 'v2 disabled',
};

/** A key's migration plan page (pages/migration-plan.ts). */
export const planPath = (keyId: string) => `/app/migration/keys/${encodeURIComponent(keyId)}/plan`;

const day = (iso: string) => iso.slice(0, 10);
const minute = (iso: string) => iso.slice(0, 16).replace('T', ' ');
const BY_LABELS = { operator: 'the operator', admin: 'an admin', policy: 'the automatic policy' } as const;

function mintForm(key: ReportKey, csrfToken: string): Html {
  const { suggested, allowed } = key.successorCapabilities;
  const replacing = key.cutover.successor?.active === true;
  const choices = allowed.map(
    (c) => html`<label><input type="checkbox" name="capabilities" value="${c}"${suggested.includes(c) ? html` checked` : ''}> ${CAPABILITY_LABELS[c]} <code>${c}</code></label>`,
  );
  return html`<form method="post" action="/app/migration/keys/${key.id}/successor" aria-label="${replacing ? 'Replace' : 'Mint'} the successor key of ${key.name}">
<input type="hidden" name="_csrf" value="${csrfToken}">${replacing ? html`<input type="hidden" name="replace" value="true">` : ''}
<details${replacing ? '' : ' open'}><summary>${replacing ? 'Replace the successor key (revokes the current one)' : 'Mint the successor v4 key'}</summary>
<fieldset><legend>Capabilities (checked: what its v2 calls need)</legend>${choices}</fieldset>
<p><button type="submit">${replacing ? 'Replace successor key' : 'Mint successor key'}</button></p></details></form>`;
}

/** A button posting the CSRF token to one of the key's actions. */
function actionForm(key: ReportKey, action: 'disable' | 'enable', label: string, csrfToken: string): Html {
  return html`<form method="post" action="/app/migration/keys/${key.id}/${action}"><input type="hidden" name="_csrf" value="${csrfToken}">
<button type="submit" aria-label="${label}: ${key.name}">${label}</button></form>`;
}

/** Before v2_quiet the disable is only forced, with a reason, and says what the cutover still lacks. */
function forcedDisableForm(key: ReportKey, missing: string[], csrfToken: string): Html {
  return html`<form method="post" action="/app/migration/keys/${key.id}/disable" aria-label="Disable ${key.name} before its cutover is done">
<input type="hidden" name="_csrf" value="${csrfToken}"><input type="hidden" name="force" value="true">
<details><summary>Disable anyway (not yet safe)</summary>
<p>Not yet safe: ${missing.join('; ')}. Disabling now cuts off an integration that may still be live.</p>
<label>Reason (required, shown with the key) <input name="reason" required maxlength="200"></label>
<p><button type="submit">Disable legacy key anyway</button></p></details></form>`;
}

/** `beforeSunset`: a disable can still be undone. */
function nextStepCell(key: ReportKey, csrfToken: string, beforeSunset: boolean, now: Date): Html {
  const { stage, successor, disabled, enabled, nextStep } = key.cutover;
  if (disabled) {
    return html`Disabled ${minute(disabled.at)} UTC by ${BY_LABELS[disabled.by]}${disabled.reason ? html`: ${disabled.reason}` : ''}
${beforeSunset ? actionForm(key, 'enable', 'Enable legacy key again', csrfToken) : ''}`;
  }
  const canMint = key.successorCapabilities.allowed.length > 0;
  return html`${nextStep}${successor?.active ? html`<br>Successor <code>${successor.maskedKey}</code>: ${successor.capabilities.map((c) => html`<code>${c}</code> `)}` : ''}
${enabled ? html`<br>Enabled again ${minute(enabled.at)} UTC by ${BY_LABELS[enabled.by]}${enabled.reason ? html`: ${enabled.reason}` : ''}` : ''}
${stage === 'v2_quiet' ? actionForm(key, 'disable', 'Disable legacy key', csrfToken) : forcedDisableForm(key, missingBeforeDisable(key, now), csrfToken)}${canMint ? mintForm(key, csrfToken) : ''}`;
}

function stageDates(key: ReportKey): string {
  return key.cutover.stages
    .filter((s) => s.at !== null)
    .map((s) => `${STAGE_LABELS[s.stage]} ${day(s.at!)}`)
    .join(' · ');
}

export function cutoverSection(report: MigrationReport, csrfToken: string): Html {
  const { quietDays, autoDisable, keysByStage } = report.cutover;
  const beforeSunset = report.generatedAt < report.sunset.at;
  const byPolicy = report.keys.filter((key) => key.cutover.disabled?.by === 'policy');
  const companyName = new Map(report.companies.map((company) => [company.id, company.name]));
  return html`<section aria-labelledby="cutover-heading"><h2 id="cutover-heading">Cutover per key</h2>
<p>Each key moves from v2 only to its successor v4 key: minted, observed working (its successful v4 calls cover the capabilities its v2 calls need), v2 calls without successor left (only those for ${quietDays} days), v2 quiet (no v2 call for ${quietDays} days), then disabled.
<span data-testid="keys-by-stage">${CUTOVER_STAGES.map((stage) => `${STAGE_LABELS[stage]}: ${keysByStage[stage]}`).join(' · ')}</span></p>
<table id="cutover"><thead><tr><th scope="col">Key</th><th scope="col">Stage</th><th scope="col">Dates (UTC)</th><th scope="col">Next step</th></tr></thead>
<tbody>${report.keys.map(
    (key) => html`<tr><td>${key.name}<br><code>${key.id}</code><br><a href="${planPath(key.id)}">Migration plan</a></td><td data-stage="${key.cutover.stage}">${STAGE_LABELS[key.cutover.stage]}</td>
<td>${stageDates(key)}</td><td>${nextStepCell(key, csrfToken, beforeSunset, new Date(report.generatedAt))}</td></tr>`,
  )}</tbody></table>
<h3>Disabled automatically</h3>
<p>${autoDisable
    ? `On: a key whose successor works and which has been quiet for ${quietDays} days is disabled automatically.`
    : 'Off (cutover.autoDisable in mappings/sunset.yaml): quiet keys wait for an admin.'}</p>
${byPolicy.length === 0
    ? html`<p>No key was disabled automatically.</p>`
    : html`<table id="auto-disabled"><thead><tr><th scope="col">Key</th><th scope="col">Company</th><th scope="col">Disabled (UTC)</th><th scope="col">Reason</th></tr></thead>
<tbody>${byPolicy.map((key) => html`<tr><td>${key.name}</td><td>${companyName.get(key.companyId) ?? key.companyId}</td><td class="nowrap">${minute(key.cutover.disabled!.at)}</td><td>${key.cutover.disabled!.reason ?? ''}</td></tr>`)}</tbody></table>`}
${eventsTable(report.cutover.recentEvents)}</section>`;
}

const ACTION_LABELS: Record<CutoverAction, string> = {
  successor_minted: 'Minted the successor key',
  successor_replaced: 'Replaced the successor key',
  disabled: 'Disabled the legacy key',
  enabled: 'Enabled the legacy key again',
};

/** The audit trail: who did what to which key, when and why, newest first. */
function eventsTable(events: readonly CutoverEvent[]): Html {
  const what = (event: CutoverEvent) =>
    html`${ACTION_LABELS[event.action]}${event.forcedAtStage ? html` (forced, at stage ${STAGE_LABELS[event.forcedAtStage]})` : ''}${event.successorKeyId && event.action !== 'disabled' ? html`: <code>${event.successorKeyId}</code>` : ''}`;
  return html`<h3>Recent cutover events</h3>
${events.length === 0
    ? html`<p>No successor was minted and no key disabled or enabled yet.</p>`
    : html`<table id="cutover-events"><caption>The latest ${events.length} mints, replaces, disables and undos, newest first</caption>
<thead><tr><th scope="col">When (UTC)</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Key</th><th scope="col">Reason</th></tr></thead>
<tbody>${events.map(
        (event) => html`<tr data-action="${event.action}"><td class="nowrap">${minute(event.at)}</td><td>${event.admin ? event.admin.email : BY_LABELS[event.by]}</td><td>${what(event)}</td>
<td>${event.legacyKeyName}<br><code>${event.legacyKeyId}</code></td><td>${event.reason ?? ''}</td></tr>`,
      )}</tbody></table>`}`;
}

/** The new successor key, shown once above the dashboard. */
export function mintedSuccessorNotice({ key, successor }: MintedSuccessor): Html {
  return html`<section aria-labelledby="new-successor"><h2 id="new-successor">Successor v4 key of “${key.name}”</h2>
<p class="notice">Copy this key now. It is shown only once; the service keeps only a hash of it.</p>
<p class="secret" data-testid="successor-key">${successor.apiKey}</p>
<p>It acts as the non-personal user <code>${successor.userEmail}</code> with ${successor.capabilities.map((c) => html`<code>${c}</code> `)}.
Hand it to the integration's owner: send it in <code>X-API-KEY</code> and verify with <code>GET /v4/me</code>. The key is “successor working” once its successful calls cover every capability the key’s v2 calls need.</p></section>`;
}
