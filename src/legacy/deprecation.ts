import type { Sunset } from './mappings.js';

export interface DeprecationVerdict {
  /** Headers every v2 response carries, 410s included. */
  headers: Record<string, string>;
  /** Set when v2 no longer answers at `now`: a brownout window, or past the sunset. */
  gone: null | { status: 410; code: 'v2_brownout' | 'v2_sunset'; message: string; retryAfterSeconds?: number };
}

/** Under the v2 prefix: where a legacy key reads its own migration plan (see owner-plan.ts). */
export const OWNER_PLAN_PATH = '/migration-plan';

/** RFC 9745: a structured-field date, `@` + whole Unix seconds. */
const structuredDate = (date: Date) => `@${Math.floor(date.getTime() / 1000)}`;

/** The deprecation signals of one v2 call at `now`, given the v4 path replacing it (undefined: no successor). */
export type DeprecationSignals = (now: Date, successorPath: string | undefined) => DeprecationVerdict;

/**
 * The signals of one route, whose guide section is `guideAnchor`. What does not depend on the call
 * is formatted here, once per route: a profile of a v2 read showed the per-call formatting.
 * Pure, so the clock is the caller's (tests move it).
 */
export function deprecationSignals(sunset: Sunset, guideAnchor: string): DeprecationSignals {
  const deprecation = structuredDate(sunset.deprecation);
  // RFC 8594 wants an IMF-fixdate, which is exactly what toUTCString produces.
  const sunsetDate = sunset.sunset.toUTCString();
  const guide = sunset.links.migrationGuide.replaceAll('{anchor}', guideAnchor);
  // The owner's own plan, as help: what this key calls, its next step, the brownouts ahead and whom to ask.
  const guideLink = `<${guide}>; rel="deprecation", <${sunset.prefix}${OWNER_PLAN_PATH}>; rel="help"`;
  const brownouts = sunset.brownouts.map(({ start, end }) => ({ start: start.getTime(), end: end.getTime(), endDate: end.toUTCString() }));
  const sunsetAt = sunset.sunset.getTime();
  // Split once: joining the parts with the path is the template's replaceAll, without its search per call.
  const successorParts = sunset.links.successor.split('{v4Path}');
  const instead = (successor: string | undefined) =>
    `${successor === undefined ? 'this endpoint has no v4 successor' : `use its v4 successor ${successor}`} (migration guide: ${guide})`;
  return (now, successorPath) => {
    const successor = successorPath === undefined ? undefined : successorParts.join(successorPath);
    const headers = {
      Deprecation: deprecation,
      Sunset: sunsetDate,
      Link: successor === undefined ? guideLink : `<${successor}>; rel="successor-version", ${guideLink}`,
    };
    const at = now.getTime();
    if (at >= sunsetAt) {
      return { headers, gone: { status: 410, code: 'v2_sunset', message: `API v2 was retired on ${sunsetDate}; ${instead(successor)}` } };
    }
    const brownout = brownouts.find(({ start, end }) => at >= start && at < end);
    if (brownout) {
      return {
        headers,
        gone: {
          status: 410,
          code: 'v2_brownout',
          message: `API v2 is in a scheduled brownout until ${brownout.endDate} ahead of its sunset on ${sunsetDate}; ${instead(successor)}`,
          // A brownout ends: a client that honours Retry-After comes back when v2 answers again.
          retryAfterSeconds: Math.ceil((brownout.end - at) / 1000),
        },
      };
    }
    return { headers, gone: null };
  };
}
