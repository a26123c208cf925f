import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { defaultMappingsDir, loadMappings, MappingError, ROUTES_FILE, SCOPES_FILE, SUNSET_FILE } from '../../src/legacy/mappings.js';
import { buildMigrationGuide, type ExampleCall, type GuideEndpoint, type MigrationGuide } from '../../src/migration/migration-guide.js';
import { buildV2OpenApiDocument } from '../../src/gateway/v2-openapi.js';
import { domainOperationByName } from '../../src/operations/domain-table.js';
import { loadShippedWith } from '../helpers/maps.js';

/*
 * The migration guide is read off the maps: each route's v4 calls, the field changes its
 * transforms make, and its example put through those transforms. The curl lines are checked by
 * bash itself, with curl and jq replaced by functions that record what they were given.
 */

const mappings = loadMappings(defaultMappingsDir());
const guide = buildMigrationGuide(mappings);
const endpointOf = (g: MigrationGuide, key: string): GuideEndpoint => {
  const found = g.endpoints.find((e) => `${e.method} ${e.path}` === key);
  if (!found) throw new Error(`no section for ${key}`);
  return found;
};
const at = (key: string) => endpointOf(guide, key);
const texts = (endpoint: GuideEndpoint, direction: 'request' | 'response') =>
  endpoint.changes.filter((c) => c.direction === direction).map((c) => c.text);

type Doc = Record<string, unknown>;

/** Runs curl lines in bash with curl and jq stubbed: the arguments of every curl call, in order. */
function curlArguments(lines: string[], variables: Record<string, string>): string[][] {
  const script = [
    'set -euo pipefail',
    // Each call's arguments, NUL-separated, one call a line, on descriptor 3.
    `curl() { printf '%s\\0' "$@" >&3; printf '\\n' >&3; }`,
    `jq() { cat >/dev/null; printf 'looked-up'; }`,
    ...lines,
  ].join('\n');
  const result = spawnSync('bash', ['--norc', '--noprofile', '-c', script], { env: { PATH: process.env.PATH, ...variables }, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return String(result.output[3]).split('\n').filter(Boolean).map((line) => line.split('\0').slice(0, -1));
}

/** The example value with its `$NAME` values replaced as bash replaces them. */
function substituted(value: unknown, variables: Record<string, string>): unknown {
  if (typeof value === 'string') return value.replace(/^\$([A-Z][A-Z0-9_]*)$/, (_, name: string) => variables[name] ?? 'looked-up');
  if (Array.isArray(value)) return value.map((item) => substituted(item, variables));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituted(v, variables)]));
  return value;
}

/** What curl was asked: the URL, the key header, the query pairs and the JSON body. */
function request(args: string[]) {
  const after = (flag: string) => args.flatMap((arg, i) => (args[i - 1] === flag ? [arg] : []));
  const body = after('-d')[0];
  return {
    method: after('-X')[0] ?? 'GET',
    url: args.find((arg) => arg.startsWith('http://'))!,
    headers: after('-H'),
    query: Object.fromEntries(after('--data-urlencode').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])),
    body: body === undefined ? undefined : (JSON.parse(body) as Doc),
  };
}

function expectCurlMatches(calls: ExampleCall[], variables: Record<string, string>): void {
  const sent = curlArguments(calls.map((call) => call.curl), variables).map(request);
  expect(sent).toHaveLength(calls.length);
  calls.forEach((call, i) => {
    const key = call.path.startsWith('/v4') ? variables.V4_KEY : variables.V2_KEY;
    expect(sent[i]).toEqual({
      method: call.method,
      url: `${variables.BASE_URL}${call.path.replace(/\$([A-Z][A-Z0-9_]*)/g, (_, name: string) => variables[name] ?? 'looked-up')}`,
      headers: [`X-API-KEY: ${key}`, ...(call.body === undefined ? [] : ['Content-Type: application/json'])],
      query: substituted(Object.fromEntries(Object.entries(call.query).map(([k, v]) => [k, String(v)])), variables),
      body: substituted(call.body, variables),
    });
  });
}

const SHELL = { BASE_URL: 'http://127.0.0.1:1', V2_KEY: 'legacy-key', V4_KEY: 'svc_sk_test' };
const shellVariables = (endpoint: GuideEndpoint) => ({
  ...SHELL,
  ...Object.fromEntries((endpoint.example?.variables ?? []).map((name) => [name, `${name.toLowerCase()}_1`])),
});

describe('the migration guide of the shipped maps', () => {
  it('has a section for every v2 route, in the order of the maps, each with its own anchor', () => {
    expect(guide.endpoints.map((e) => `${e.method} ${e.path.slice(mappings.sunset.prefix.length)}`)).toEqual(mappings.routes.map((r) => `${r.method} ${r.path}`));
    expect(new Set(guide.endpoints.map((e) => e.anchor)).size).toBe(guide.endpoints.length);
    expect(at('GET /v2/employees/:id').anchor).toBe('get-employees-id');
    expect(guide).toMatchObject({ sunset: '2027-01-01T00:00:00.000Z', deprecation: '2025-07-01T00:00:00.000Z', pageSize: 50 });
  });

  it.each(mappings.routes.filter((r) => r.kind === 'v4').map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s names its v4 calls, their capability and a v2 and v4 example',
    (key, route) => {
      if (route.kind !== 'v4') throw new Error('v4 routes only');
      const endpoint = at(`${route.method} /v2${key.split(' ')[1]}`);
      const first = domainOperationByName(route.operation)!;
      expect(endpoint.successor[0]).toEqual({ operation: first.name, method: first.method, path: first.path, title: first.title, capability: first.capability });
      expect(endpoint.capabilities).toContain(first.capability);
      expect(endpoint.noSuccessor).toBeUndefined();
      expect(endpoint.example?.v2.curl).toMatch(/^curl -sS /);
      expect(endpoint.example?.v4.length).toBeGreaterThan(0);
    },
  );

  it('spells out the renames of the spec in both directions', () => {
    const patch = at('PATCH /v2/employees/:id');
    expect(texts(patch, 'request')).toEqual(
      expect.arrayContaining([
        'The v2 body field `secondaryEmail` is the v4 body field `personalEmail`.',
        'The v2 body field `teamId` becomes the v4 body field `teamName`: send the `name` that `get_team` (`GET /v4/teams/:id`) answers for that `id`.',
        'v2 sent `addressOne`, `addressTwo`, `city`, `state`, `zipCode`, `country`, `phone` inside the `deliveryAddress` object; v4 takes them as body fields of their own.',
        'v2 required `deliveryAddress.country`; v4 does not.',
      ]),
    );
    expect(texts(at('GET /v2/employees/:id'), 'response')).toEqual(
      expect.arrayContaining([
        'v4 answers `personalEmail` where v2 answered `secondaryEmail`.',
        'v4 answers `teamName` where v2 answered `teamId`, the `id` that `list_teams` (`GET /v4/teams`) answers for that `name`.',
        'v4 answers `addressOne`, `addressTwo`, `city`, `state`, `zipCode`, `country`, `phone` as fields of the record; v2 answered them inside a `deliveryAddress` object (and `country` outside it too).',
        'v4 adds `department`, `division`, `jobTitle`, `taxId`, which v2 did not have.',
      ]),
    );
    expect(texts(at('GET /v2/employees'), 'request')).toEqual([
      'The v2 query parameter `teamId` becomes the v4 query parameter `teamName`: send the `name` that `get_team` (`GET /v4/teams/:id`) answers for that `id`.',
    ]);
  });

  it('says what v4 no longer offers, and what to do instead', () => {
    expect(texts(at('GET /v2/employees/:id'), 'request')).toEqual([expect.stringMatching(/^Not in v4: `invitation=true`\. .*sendInvitation/)]);
    expect(texts(at('POST /v2/employees'), 'request')).toContain(
      'v4 refuses `addressTwo`, `phone` in this call: send them in a second call, `update_employee` (`PATCH /v4/employees/:id`), with `id` set to the `id` the first call answered.',
    );
    expect(at('POST /v2/employees').successor.map((call) => call.operation)).toEqual(['create_employee', 'update_employee']);
    expect(texts(at('PATCH /v2/employees/:id/deliveryAddress'), 'request')).toEqual(['v2 refused a null or empty `country` (leaving it out was allowed); v4 does not require it.']);
    expect(texts(at('GET /v2/employees/:id/deliveryAddress'), 'response')).toEqual([
      'v4 answers the whole record; v2 answered only `addressOne`, `addressTwo`, `city`, `state`, `zipCode`, `country`, `phone`.',
    ]);
  });

  it('turns bare lists into the paged envelope and the order endpoints into order types', () => {
    expect(texts(at('GET /v2/teams'), 'response')).toEqual([
      'v2 answered a bare array of every record; v4 answers one page, `{ teams, page, pageSize, totalCount, nextCursor }`, of at most 50 records in `teams` (set `limit`): call again with `cursor` set to `nextCursor` until it is null.',
    ]);
    for (const [path, type] of [['assignToEmployee', 'Deployment'], ['offboarding', 'Offboarding'], ['collection', 'Collection'], ['swap', 'Swap from Inventory']]) {
      const endpoint = at(`POST /v2/orders/${path}`);
      expect(endpoint.successor.map((call) => `${call.method} ${call.path}`)).toEqual(['POST /v4/orders']);
      expect(texts(endpoint, 'request')).toEqual([`v4 needs the body field \`orderType\` set to \`"${type}"\`: the v2 endpoint implied it.`]);
    }
    expect(texts(at('POST /v2/employees/:id/offboarding'), 'request')[0]).toBe('The v2 path parameter `id` is the v4 body field `employeeId`.');
    expect(texts(at('POST /v2/employees/products/productInUse'), 'request')).toEqual(['The v2 body field `employeeId` is the v4 path parameter `id`.']);
  });

  it('adds the capability of a lookup apart from that of the calls', () => {
    expect(at('PATCH /v2/employees/:id')).toMatchObject({ capabilities: ['mcp:employees:write'], lookupCapabilities: ['mcp:teams:read'] });
    expect(at('GET /v2/employees/:id')).toMatchObject({ capabilities: ['mcp:employees:read'], lookupCapabilities: [] });
  });

  it('keeps the routes without a v4 successor on v2, with the reason and what fits instead', () => {
    expect(at('GET /v2/catalogs')).toMatchObject({
      status: 'no-successor',
      successor: [],
      capabilities: [],
      changes: [],
      noSuccessor: { reason: 'catalogs and collections are outside the migrated groups', instead: expect.stringContaining('create_purchase_order') },
    });
    expect(at('GET /v2/organization/companies').noSuccessor).toEqual({ reason: 'no organization-level principal in v4', instead: undefined });
  });

  it('translates each example with the route’s own transforms: the v4 calls replacing the v2 one', () => {
    const patch = at('PATCH /v2/employees/:id').example!;
    expect(patch.variables).toEqual(['EMPLOYEE_ID', 'TEAM_ID']);
    expect(patch.v2).toMatchObject({ method: 'PATCH', path: '/v2/employees/$EMPLOYEE_ID', body: { secondaryEmail: 'dana@home.example', teamId: '$TEAM_ID', deliveryAddress: { city: 'Potsdam', country: 'DE' } } });
    expect(patch.v4).toMatchObject([
      { method: 'GET', path: '/v4/teams/$TEAM_ID', sets: { variable: 'TEAM_NAME', field: 'name' } },
      { method: 'PATCH', path: '/v4/employees/$EMPLOYEE_ID', body: { city: 'Potsdam', country: 'DE', personalEmail: 'dana@home.example', teamName: '$TEAM_NAME' } },
    ]);
    const create = at('POST /v2/employees').example!;
    expect(create.v4.map((call) => `${call.method} ${call.path}`)).toEqual(['GET /v4/teams/$TEAM_ID', 'POST /v4/employees', 'PATCH /v4/employees/$NEW_ID']);
    expect(create.v4[1]!.sets).toEqual({ variable: 'NEW_ID', field: 'id' });
    expect(create.v4[2]!.body).toEqual({ addressTwo: 'Hinterhaus', phone: '+49 30 1234' });
    expect(at('GET /v2/teams').example!.v4[0]).toMatchObject({ path: '/v4/teams', query: { limit: 50 } });
    expect(at('POST /v2/orders/purchaseOrder').example!.v4[0]!.body).toMatchObject({ orderType: 'Purchase for Inventory' });
  });

  it.each(guide.endpoints.filter((e) => e.example).map((e) => [`${e.method} ${e.path}`, e] as const))(
    'writes curl lines for %s that bash runs as the example says',
    (_key, endpoint) => {
      const variables = shellVariables(endpoint);
      expectCurlMatches([endpoint.example!.v2], variables);
      if (endpoint.example!.v4.length > 0) expectCurlMatches(endpoint.example!.v4, variables);
    },
  );

  it('quotes literal values the shell would otherwise expand', () => {
    const tricky = 'It\'s "$HOME" `id` \\ 100%';
    const edited = loadShippedWith(
      [ROUTES_FILE, 'guide: { example: { name: Platform } }', `guide: { example: { name: '${tricky.replaceAll("'", "''")}', note: $TEAM_ID } }`],
      [ROUTES_FILE, 'guide: { example: { teamId: $TEAM_ID } }', "guide: { example: { teamId: 'a b/c' } }"],
    );
    const g = buildMigrationGuide(edited);
    const create = endpointOf(g, 'POST /v2/teams');
    expect(create.example!.v2.body).toEqual({ name: tricky, note: '$TEAM_ID' });
    expectCurlMatches([create.example!.v2, ...create.example!.v4], { ...SHELL, TEAM_ID: 'team_1' });
    const [sent] = curlArguments([create.example!.v2.curl], { ...SHELL, TEAM_ID: 'team_1' }).map(request);
    expect(sent!.body).toEqual({ name: tricky, note: 'team_1' });
    const read = endpointOf(g, 'GET /v2/teams/:teamId');
    expect(curlArguments([read.example!.v2.curl], SHELL).map(request)[0]!.url).toBe('http://127.0.0.1:1/v2/teams/a%20b%2Fc');
  });
});

describe('the guide and the v2 OpenAPI document follow the maps', () => {
  const BASE = 'http://127.0.0.1:3001';
  type Doc3 = { paths: Record<string, Record<string, Doc>> };
  const v2Doc = (m = mappings) => buildV2OpenApiDocument(m, BASE) as unknown as Doc3;

  it('a field renamed in the maps is renamed in the guide and the document', () => {
    const edited = loadShippedWith(
      [ROUTES_FILE, '{ op: rename, from: personalEmail, to: secondaryEmail }', '{ op: rename, from: privateEmail, to: secondaryEmail }'],
      [ROUTES_FILE, '{ op: rename, from: secondaryEmail, to: personalEmail }', '{ op: rename, from: secondaryEmail, to: privateEmail }'],
    );
    const g = buildMigrationGuide(edited);
    expect(texts(endpointOf(g, 'PATCH /v2/employees/:id'), 'request')).toContain('The v2 body field `secondaryEmail` is the v4 body field `privateEmail`.');
    expect(texts(endpointOf(g, 'GET /v2/employees/:id'), 'response')).toContain('v4 answers `privateEmail` where v2 answered `secondaryEmail`.');
    expect(endpointOf(g, 'PATCH /v2/employees/:id').example!.v4[1]!.body).toHaveProperty('privateEmail', 'dana@home.example');
    expect(JSON.stringify(g)).not.toContain('personalEmail');
    expect(v2Doc(edited).paths['/v2/employees/{id}']!.get!.description).toContain('v4 answers `privateEmail` where v2 answered `secondaryEmail`.');
    expect(v2Doc().paths['/v2/employees/{id}']!.get!.description).toContain('v4 answers `personalEmail` where v2 answered `secondaryEmail`.');
  });

  it('a route added to the maps gets its section and its deprecated operation', () => {
    const edited = loadShippedWith(
      [SCOPES_FILE, 'endpoints: [GET /catalogs/:catalogId/items]', 'endpoints: [GET /catalogs/:catalogId/items, GET /catalogs/:catalogId]'],
      [ROUTES_FILE, '  - { method: GET, path: /company,', '  - { method: GET, path: /catalogs/:catalogId, scope: api.catalogs.items.getAll, passthrough: true }\n  - { method: GET, path: /company,'],
    );
    expect(guide.endpoints.some((e) => e.anchor === 'get-catalogs-catalogid')).toBe(false);
    expect(endpointOf(buildMigrationGuide(edited), 'GET /v2/catalogs/:catalogId')).toMatchObject({
      anchor: 'get-catalogs-catalogid',
      noSuccessor: { reason: 'catalogs and collections are outside the migrated groups' },
    });
    expect(v2Doc().paths['/v2/catalogs/{catalogId}']).toBeUndefined();
    expect(v2Doc(edited).paths['/v2/catalogs/{catalogId}']!.get).toMatchObject({
      operationId: 'get-catalogs-catalogid',
      deprecated: true,
      'x-v4-successor': [],
      'x-no-v4-successor': 'catalogs and collections are outside the migrated groups',
      parameters: [{ name: 'catalogId', in: 'path', required: true, schema: { type: 'string' } }],
    });
  });

  it('a sunset moved in the maps moves in both', () => {
    const edited = loadShippedWith([SUNSET_FILE, "sunset: '2027-01-01T00:00:00Z'", "sunset: '2027-07-01T00:00:00Z'"]);
    expect(buildMigrationGuide(edited).sunset).toBe('2027-07-01T00:00:00.000Z');
    expect(v2Doc(edited).paths['/v2/teams']!.get).toMatchObject({ 'x-sunset': '2027-07-01T00:00:00.000Z' });
  });

  it('the fields new in v4 are those the maps declare', () => {
    const edited = loadShippedWith([ROUTES_FILE, 'x-employee-new-in-v4: &employeeNewInV4 [department, division, jobTitle, taxId]', 'x-employee-new-in-v4: &employeeNewInV4 [jobTitle]']);
    expect(texts(endpointOf(buildMigrationGuide(edited), 'GET /v2/employees/:id'), 'response')).toContain('v4 adds `jobTitle`, which v2 did not have.');
  });
});

describe('the maps refuse a guide that contradicts its route', () => {
  const refused = (...edits: Parameters<typeof loadShippedWith>) => {
    try {
      buildMigrationGuide(loadShippedWith(...edits));
    } catch (error) {
      expect(error).toBeInstanceOf(MappingError);
      return (error as Error).message;
    }
    throw new Error('the maps were accepted');
  };

  it('an example without a path parameter of its route', () => {
    expect(refused([ROUTES_FILE, 'guide: { example: { teamId: $TEAM_ID, name: Customer Support } }', 'guide: { example: { name: Customer Support } }'])).toMatch(
      /^v2-routes\.yaml: routes\.\d+ \(PATCH \/teams\/:teamId\): guide\.example lacks the path parameter teamId$/,
    );
  });

  it('a new field that the route’s v4 operation does not have', () => {
    expect(refused([ROUTES_FILE, 'guide: { example: { name: Platform } }', 'guide: { example: { name: Platform }, new_in_v4: [colour] }'])).toMatch(
      /\(POST \/teams\): guide\.new_in_v4 names colour, which the route's v4 operation neither takes nor answers$/,
    );
  });

  it('an example the route’s own transforms refuse', () => {
    expect(refused([ROUTES_FILE, '{ example: { id: $EMPLOYEE_ID }, new_in_v4', "{ example: { id: $EMPLOYEE_ID, invitation: 'true' }, new_in_v4"])).toMatch(
      /^v2-routes\.yaml: GET \/employees\/:id: guide\.example is refused by the route's own transforms: invitation=true is not available/,
    );
  });

  it('a move_out_of without the fields it spreads', () => {
    expect(refused([ROUTES_FILE, '{ op: move_out_of, from: deliveryAddress, fields: *addressFields }', '{ op: move_out_of, from: deliveryAddress }'])).toMatch(
      /^v2-routes\.yaml: .*fields/,
    );
  });

  it.each(['docs/migration', 'javascript:alert(1)', '/docs/migration#<x>', '//elsewhere.example/guide', 'https://bad host/'])('a migration guide link %s', (link) => {
    expect(refused([SUNSET_FILE, "migrationGuide: '/docs/migration#{anchor}'", `migrationGuide: '${link}'`])).toMatch(/^sunset\.yaml: links\.migrationGuide: must be/);
  });

  it('accepts an operator’s absolute guide URL', () => {
    expect(loadShippedWith([SUNSET_FILE, "migrationGuide: '/docs/migration#{anchor}'", "migrationGuide: 'https://wiki.example/v2-to-v4'"]).sunset.links.migrationGuide).toBe(
      'https://wiki.example/v2-to-v4',
    );
  });
});
