import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deprecationSignals } from '../../src/legacy/deprecation.js';
import { loadMappings } from '../../src/legacy/mappings.js';

const { sunset } = loadMappings(join(import.meta.dirname, '../../mappings'));
const at = (iso: string) => new Date(iso);
const employee = { successorPath: '/v4/employees/emp_1', guideAnchor: 'get-employees-id' };
const teams = { successorPath: '/v4/teams', guideAnchor: 'get-teams' };
const catalogs = { successorPath: undefined, guideAnchor: 'get-catalogs' };
type Links = typeof employee | typeof catalogs;
const deprecationVerdict = (ofSunset: typeof sunset, now: Date, links: Links) => deprecationSignals(ofSunset, links.guideAnchor)(now, links.successorPath);
const verdict = (iso: string, links: Links = employee) => deprecationVerdict(sunset, at(iso), links);

describe('deprecationSignals', () => {
  it('sends the three signals in their RFC formats, the deprecation link to the route\'s section of the served guide', () => {
    expect(verdict('2026-06-01T00:00:00Z').headers).toEqual({
      Deprecation: '@1751328000',
      Sunset: 'Fri, 01 Jan 2027 00:00:00 GMT',
      Link: '</v4/employees/emp_1>; rel="successor-version", </docs/migration#get-employees-id>; rel="deprecation", </v2/migration-plan>; rel="help"',
    });
  });

  it('sends no successor-version link for a route without a v4 successor', () => {
    expect(verdict('2026-06-01T00:00:00Z', catalogs).headers.Link).toBe('</docs/migration#get-catalogs>; rel="deprecation", </v2/migration-plan>; rel="help"');
  });

  it('fills {v4Path} into a successor template with a host', () => {
    const withHost = { ...sunset, links: { ...sunset.links, successor: 'https://api.example{v4Path}' } };
    expect(deprecationVerdict(withHost, at('2026-06-01T00:00:00Z'), teams).headers.Link).toMatch(
      /^<https:\/\/api\.example\/v4\/teams>; rel="successor-version", /,
    );
  });

  it('follows an operator\'s own guide URL, with or without {anchor}', () => {
    const own = (migrationGuide: string) => deprecationVerdict({ ...sunset, links: { ...sunset.links, migrationGuide } }, at('2026-06-01T00:00:00Z'), teams);
    expect(own('https://wiki.example/v2-to-v4').headers.Link).toBe('</v4/teams>; rel="successor-version", <https://wiki.example/v2-to-v4>; rel="deprecation", </v2/migration-plan>; rel="help"');
    expect(own('https://wiki.example/v2#{anchor}').headers.Link).toContain('<https://wiki.example/v2#get-teams>; rel="deprecation"');
  });

  it('answers normally before the first brownout and between brownouts', () => {
    expect(verdict('2026-12-01T13:59:59Z').gone).toBeNull();
    expect(verdict('2026-12-10T00:00:00Z').gone).toBeNull();
  });

  it.each([
    ['2026-12-01T14:00:00Z', 'Tue, 01 Dec 2026 17:00:00 GMT', 3 * 3600],
    ['2026-12-01T16:59:59.500Z', 'Tue, 01 Dec 2026 17:00:00 GMT', 1],
    ['2026-12-15T14:00:00Z', 'Tue, 15 Dec 2026 20:00:00 GMT', 6 * 3600],
    ['2026-12-15T19:59:59Z', 'Tue, 15 Dec 2026 20:00:00 GMT', 1],
  ])('is 410 v2_brownout inside a window (%s), naming its end and the successor, retrying after its end', (now, end, retryAfterSeconds) => {
    const { headers, gone } = verdict(now);
    expect(gone).toMatchObject({ status: 410, code: 'v2_brownout', retryAfterSeconds });
    expect(gone?.message).toContain(end);
    expect(gone?.message).toContain('/v4/employees/emp_1');
    expect(gone?.message).toContain('/docs/migration#get-employees-id');
    expect(headers.Sunset).toBe('Fri, 01 Jan 2027 00:00:00 GMT');
  });

  it('answers again at the end of a window (the end is exclusive)', () => {
    expect(verdict('2026-12-01T17:00:00Z').gone).toBeNull();
    expect(verdict('2026-12-15T20:00:00Z').gone).toBeNull();
  });

  it('still answers just before the sunset', () => {
    expect(verdict('2026-12-31T23:59:59Z').gone).toBeNull();
  });

  it.each(['2027-01-01T00:00:00Z', '2028-05-01T00:00:00Z'])('is 410 v2_sunset at and after the sunset (%s)', (now) => {
    const { headers, gone } = verdict(now);
    expect(gone).toMatchObject({ status: 410, code: 'v2_sunset' });
    // Past the sunset v2 never answers again: nothing to retry after.
    expect(gone).not.toHaveProperty('retryAfterSeconds');
    expect(gone?.message).toContain('/v4/employees/emp_1');
    expect(gone?.message).toContain('Fri, 01 Jan 2027 00:00:00 GMT');
    expect(headers.Deprecation).toBe('@1751328000');
  });

  it('names no successor in the 410 of a route without one, only the guide', () => {
    for (const now of ['2026-12-01T15:00:00Z', '2027-02-01T00:00:00Z']) {
      const message = verdict(now, catalogs).gone?.message;
      expect(message).toContain('this endpoint has no v4 successor');
      expect(message).toContain('/docs/migration#get-catalogs');
      expect(message).not.toContain('/v4');
    }
  });

  it('follows an operator extending the sunset', () => {
    const extended = { ...sunset, sunset: at('2027-07-01T00:00:00Z') };
    expect(deprecationVerdict(extended, at('2027-03-01T00:00:00Z'), teams).gone).toBeNull();
    expect(deprecationVerdict(extended, at('2027-03-01T00:00:00Z'), teams).headers.Sunset).toBe(
      'Thu, 01 Jul 2027 00:00:00 GMT',
    );
  });
});
