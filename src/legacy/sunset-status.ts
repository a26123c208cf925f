/*
 * Where v2 stands on its way to the sunset at a given moment: the days left, and the brownout
 * windows (scheduled 410 Gone hours) that are on now or still to come. Every surface that shows the
 * sunset shows the brownouts from here (plan, audit, dashboard, migration.json, metrics), so an
 * integration owner hears of a window before it breaks their integration.
 */

const DAY_MS = 86_400_000;

export interface BrownoutWindow {
  start: string;
  end: string;
}

export interface SunsetStatus {
  at: string;
  daysLeft: number;
  brownouts: {
    /** The window v2 is in now (it answers 410 Gone until its end), or null. */
    active: BrownoutWindow | null;
    /** The next window to start, or null when none is left. */
    next: BrownoutWindow | null;
    /** Every window that has not ended yet, earliest first. */
    scheduled: BrownoutWindow[];
  };
}

/** What sunset.yaml schedules: the sunset and its brownout windows. */
export interface SunsetSchedule {
  sunset: Date;
  brownouts: readonly { start: Date; end: Date }[];
}

const windowOf = ({ start, end }: { start: Date; end: Date }): BrownoutWindow => ({ start: start.toISOString(), end: end.toISOString() });

/** The windows containing `now` or after it, earliest first. */
function windowsFrom(schedule: SunsetSchedule, now: Date) {
  return schedule.brownouts.filter(({ end }) => end.getTime() > now.getTime()).sort((a, b) => a.start.getTime() - b.start.getTime());
}

export function sunsetStatus(schedule: SunsetSchedule, now: Date): SunsetStatus {
  const at = now.getTime();
  const left = windowsFrom(schedule, now);
  const active = left.find(({ start }) => start.getTime() <= at);
  const next = left.find(({ start }) => start.getTime() > at);
  return {
    at: schedule.sunset.toISOString(),
    daysLeft: Math.max(0, Math.ceil((schedule.sunset.getTime() - at) / DAY_MS)),
    brownouts: { active: active ? windowOf(active) : null, next: next ? windowOf(next) : null, scheduled: left.map(windowOf) },
  };
}

const utc = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/** "2026-12-01 14:00 UTC – 17:00 UTC", the end's day named only when it differs. */
export function windowText({ start, end }: BrownoutWindow): string {
  return `${utc(start)} – ${start.slice(0, 10) === end.slice(0, 10) ? utc(end).slice(11) : utc(end)}`;
}

/**
 * The sentence every text surface prints about brownouts, or undefined when none is left: the
 * window on now (v2 answers 410 Gone until its end), else the next one, with how far away it is.
 */
export function brownoutNotice(brownouts: SunsetStatus['brownouts'], now: Date): string | undefined {
  const { active, next } = brownouts;
  if (active) return `v2 is in a scheduled brownout now, until ${utc(active.end)}: every v2 call answers 410 Gone until then.`;
  if (!next) return undefined;
  const days = Math.floor((Date.parse(next.start) - now.getTime()) / DAY_MS);
  const when = days === 0 ? 'within a day' : `in ${days} day${days === 1 ? '' : 's'}`;
  return `Next v2 brownout ${when}: ${windowText(next)}; every v2 call answers 410 Gone during it.`;
}
