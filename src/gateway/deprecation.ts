import type { Sunset } from './mappings.js';

export interface DeprecationVerdict {
  /** Headers every v2 response carries, 410s included. */
  headers: Record<string, string>;
  /** Set when v2 no longer answers at `now`: a brownout window, or past the sunset. */
  gone: null | { status: 410; code: 'v2_brownout' | 'v2_sunset'; message: string };
}

/** What the Link header of one v2 call points to. */
export interface DeprecationLinks {
  /** The v4 path replacing the call; undefined for a route without a v4 successor. */
  successorPath: string | undefined;
  /** The route's section of the migration guide. */
  guideAnchor: string;
}

/** RFC 9745: a structured-field date, `@` + whole Unix seconds. */
const structuredDate = (date: Date) => `@${Math.floor(date.getTime() / 1000)}`;

/** The v2 deprecation signals at `now`; pure, so the clock is the caller's (tests move it). */
export function deprecationVerdict(sunset: Sunset, now: Date, { successorPath, guideAnchor }: DeprecationLinks): DeprecationVerdict {
  const successor = successorPath === undefined ? undefined : sunset.links.successor.replaceAll('{v4Path}', successorPath);
  const guide = sunset.links.migrationGuide.replaceAll('{anchor}', guideAnchor);
  const links = [...(successor === undefined ? [] : [`<${successor}>; rel="successor-version"`]), `<${guide}>; rel="deprecation"`];
  const headers = {
    Deprecation: structuredDate(sunset.deprecation),
    // RFC 8594 wants an IMF-fixdate, which is exactly what toUTCString produces.
    Sunset: sunset.sunset.toUTCString(),
    Link: links.join(', '),
  };
  const instead = successor === undefined ? 'this endpoint has no v4 successor' : `use its v4 successor ${successor}`;
  if (now >= sunset.sunset) {
    return {
      headers,
      gone: {
        status: 410,
        code: 'v2_sunset',
        message: `API v2 was retired on ${sunset.sunset.toUTCString()}; ${instead} (migration guide: ${guide})`,
      },
    };
  }
  const brownout = sunset.brownouts.find(({ start, end }) => now >= start && now < end);
  if (brownout) {
    return {
      headers,
      gone: {
        status: 410,
        code: 'v2_brownout',
        message: `API v2 is in a scheduled brownout until ${brownout.end.toUTCString()} ahead of its sunset on ${sunset.sunset.toUTCString()}; ${instead} (migration guide: ${guide})`,
      },
    };
  }
  return { headers, gone: null };
}
