import { brownoutNotice, windowText, type SunsetStatus } from '../../legacy/sunset-status.js';
import { html, type Html } from '../../kit/html.js';

/**
 * Above the dashboard and every plan: a banner while v2 is in a brownout, a notice before the
 * next one, and the windows still scheduled; nothing once none is left.
 */
export function brownoutBanner(status: SunsetStatus, now: Date): Html | '' {
  const notice = brownoutNotice(status.brownouts, now);
  if (notice === undefined) return '';
  const { active, scheduled } = status.brownouts;
  const windows = html`<span class="tools"> Scheduled brownouts: ${scheduled.map((w, i) => html`${i > 0 ? '; ' : ''}${windowText(w)}`)}.</span>`;
  return active
    ? html`<div class="error" role="alert" data-testid="brownout-banner" data-brownout="active"><strong>Brownout now.</strong> ${notice}${windows}</div>`
    : html`<div class="notice" role="note" data-testid="brownout-banner" data-brownout="scheduled"><strong>Brownout ahead.</strong> ${notice}${windows}</div>`;
}
