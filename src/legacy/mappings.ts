import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';
import type { ChangeTopic } from '../store/change-feed.js';
import { ConfigError } from '../kit/config.js';
import { CAPABILITIES, CapabilitySchema, type Capability } from '../access/capabilities.js';
import { domainOperationByName } from '../operations/domain-table.js';
import type { AnyOperation } from '../operations/operation.js';
import { pathParams } from '../kit/path-template.js';
import { ruleCovers as entryMatches, ruleFor as scopeEntryFor } from './scope-rules.js';
import { DEFAULT_QUIET_DAYS } from './cutover-stage.js';

/** The v2 → v4 maps are unusable: the message names the file and the entry at fault. */
export class MappingError extends Error {
  override name = 'MappingError';
}

export const SCOPES_FILE = 'scopes.yaml';
export const ROUTES_FILE = 'v2-routes.yaml';
export const SUNSET_FILE = 'sunset.yaml';

/** The maps shipped with the package, whether running from src/ (tsx) or dist/src/. */
export function defaultMappingsDir(): string {
  const candidates = ['../../mappings', '../../../mappings'].map((relative) => fileURLToPath(new URL(relative, import.meta.url)));
  return candidates.find((dir) => existsSync(join(dir, SCOPES_FILE))) ?? candidates[0]!;
}

/** Data whose changes the change feed reports, so lookups of it can be reused until then. */
const LookupTopic = z.enum(['teams'] satisfies ChangeTopic[]);
export type LookupTopic = z.output<typeof LookupTopic>;

const FieldName = z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, 'must be a field name (letters and digits)');
const Fields = z.array(FieldName);
const OperationName = z.string().regex(/^[a-z][a-z_]*$/, 'must be an operation-table name such as list_employees');
const ScopeName = z.string().regex(/^api(\.[A-Za-z]+)+$/, 'must be a v2 scope such as api.employees.getAll');
const WildcardScopeName = z.string().regex(/^api(\.[A-Za-z]+)+(\.\*)?$/, 'must be a v2 scope, or a prefix ending in .*');
const V2Method = z.enum(['GET', 'POST', 'PATCH']);
const V2Path = z.string().regex(/^(\/(:?[A-Za-z][A-Za-z0-9]*))+$/, 'must be an Express-style path such as /employees/:id');
const Endpoint = z
  .string()
  .regex(/^(GET|POST|PATCH) (\/(:?[A-Za-z][A-Za-z0-9]*))+$/, 'must be "METHOD /path", e.g. "GET /employees/:id"');

/** The named transforms the translation engine implements; the YAML only composes them. */
export const TransformSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('rename'), from: FieldName, to: FieldName }),
  z.strictObject({ op: z.literal('move_into'), into: FieldName, fields: Fields.min(1), keep: Fields.default([]) }),
  z.strictObject({ op: z.literal('move_out_of'), from: FieldName, fields: Fields.min(1) }),
  z.strictObject({
    op: z.literal('lookup'),
    from: FieldName,
    to: FieldName,
    operation: OperationName,
    // The v4 record field compared with the value (a get's input field, or a list element's field).
    match: FieldName,
    take: FieldName,
    // Answers may serve later requests of the same key until this data changes (see ChangeFeed).
    reuse_until_changed: LookupTopic.optional(),
  }),
  z.strictObject({ op: z.literal('unwrap_list'), key: FieldName }),
  z
    .strictObject({
      op: z.literal('set'),
      field: FieldName,
      value: z.union([z.string(), z.number(), z.boolean(), z.null()]),
      when_present: FieldName.optional(),
      when_absent: FieldName.optional(),
    })
    .refine((t) => t.when_present === undefined || t.when_absent === undefined, {
      message: 'give at most one of when_present and when_absent',
      path: ['when_absent'],
    }),
  z.strictObject({ op: z.literal('pick'), fields: Fields }),
  z.strictObject({
    op: z.literal('require'),
    fields: Fields.min(1),
    within: FieldName.optional(),
    allow_absent: z.boolean().default(false),
  }),
  z.strictObject({
    op: z.literal('refuse'),
    field: FieldName,
    equals: z.string().optional(),
    status: z.union([z.literal(400), z.literal(422)]),
    message: z.string().min(1),
  }),
  z.strictObject({ op: z.literal('follow_up'), operation: OperationName, fields: Fields.min(1), id_from: FieldName }),
]);
export type Transform = z.output<typeof TransformSchema>;

/** A field path as the shadow check reports it: `deliveryAddress.city`, `[]` (each element of a bare list), `[].teamId`. */
const FieldPath = z
  .string()
  .regex(/^(?:\[\]|[A-Za-z][A-Za-z0-9]*(?:\[\])?)(?:\.[A-Za-z][A-Za-z0-9]*(?:\[\])?)*$/, 'must be a field path such as deliveryAddress.city, [].teamId or subOrders[]');

/** How the shadow check compares the translated answer of a GET with the legacy v2 one (see shadow-diff.ts). */
const CompareSchema = z.strictObject({
  // Lists whose order the v2 contract does not define: elements matched by a key field, or by value without one.
  unordered: z
    .array(z.strictObject({ elements: FieldPath.regex(/\[\]$/, 'must name the elements of a list, ending in []'), by: FieldName.optional() }))
    .default([]),
  // Values that legitimately differ between the two services (timestamps): only their presence is compared.
  volatile: z.array(FieldPath).default([]),
  // Fields v4 added that v2 never had: no difference when the legacy answer lacks them.
  added_in_v4: z.array(FieldPath).default([]),
});
export type CompareRules = z.output<typeof CompareSchema>;
const NO_COMPARE_RULES: CompareRules = { unordered: [], volatile: [], added_in_v4: [] };

/** A nested list is a YAML alias of shared transforms: it is spliced in place. */
const Transforms = z
  .preprocess((list) => (Array.isArray(list) ? list.flat() : list), z.array(TransformSchema))
  .default([]);

/**
 * What the migration guide needs besides the translation (see migration-guide.ts): an example v2
 * request, as the one document the route translates, whose `$NAME` values are shell variables the
 * reader sets; and the fields v4 added that v2 never had.
 */
const GuideSchema = z.strictObject({
  example: z.record(FieldName, z.unknown()),
  new_in_v4: Fields.default([]),
});
export type RouteGuide = z.output<typeof GuideSchema>;

const ScopeEntrySchema = z
  .strictObject({
    status: z.enum(['mapped', 'mapped-broader', 'covered-by-order-type', 'no-successor']),
    capability: CapabilitySchema.optional(),
    endpoints: z.array(Endpoint).min(1),
    note: z.string().min(1).optional(),
    reason: z.string().min(1).optional(),
    // What an integration uses in v4 instead, where something fits (the migration guide shows it).
    instead: z.string().min(1).optional(),
  })
  .superRefine((entry, ctx) => {
    const need = (field: 'capability' | 'note' | 'reason', present: boolean, rule: string) => {
      if ((entry[field] !== undefined) !== present) ctx.addIssue({ code: 'custom', path: [field], message: rule });
    };
    need('capability', entry.status !== 'no-successor', `required for status ${entry.status}, forbidden for no-successor`);
    if (entry.status === 'mapped-broader') need('note', true, 'required for mapped-broader: say how v4 is broader');
    need('reason', entry.status === 'no-successor' || entry.status === 'covered-by-order-type', `required for status ${entry.status}, forbidden otherwise`);
  });

const ScopesFileSchema = z.strictObject({ scopes: z.record(WildcardScopeName, ScopeEntrySchema) });

const RouteSchema = z
  .strictObject({
    method: V2Method,
    path: V2Path,
    scope: ScopeName,
    passthrough: z.literal(true).optional(),
    request: Transforms,
    v4: OperationName.optional(),
    response: Transforms,
    compare: CompareSchema.optional(),
    guide: GuideSchema.optional(),
  })
  .superRefine((route, ctx) => {
    if ((route.v4 === undefined) === (route.passthrough === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['v4'], message: 'give exactly one of v4 (the operation called) and passthrough: true' });
    }
    if (route.passthrough && (route.request.length > 0 || route.response.length > 0)) {
      ctx.addIssue({ code: 'custom', path: ['request'], message: 'a passthrough route is forwarded unchanged: no transforms' });
    }
    if (route.compare && (route.method !== 'GET' || route.passthrough)) {
      ctx.addIssue({ code: 'custom', path: ['compare'], message: 'only a translated GET is compared with the legacy v2 API (writes are never mirrored)' });
    }
    const bareList = route.response.some((t) => t.op === 'unwrap_list');
    const paths = [...(route.compare?.unordered.map((u) => u.elements) ?? []), ...(route.compare?.volatile ?? []), ...(route.compare?.added_in_v4 ?? [])];
    for (const path of paths.filter((p) => p.startsWith('[]') !== bareList)) {
      ctx.addIssue({ code: 'custom', path: ['compare'], message: `${path}: ${bareList ? 'this route answers a bare list, so paths start with []' : 'this route answers a record, so no path starts with []'}` });
    }
  });

const RoutesFileSchema = z.strictObject({ routes: z.array(RouteSchema).min(1) });

const Instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const SunsetFileSchema = z.strictObject({
  deprecation: Instant,
  sunset: Instant,
  brownouts: z.array(z.strictObject({ start: Instant, end: Instant })).default([]),
  links: z.strictObject({
    successor: z.string().includes('{v4Path}', { message: 'must contain {v4Path}' }),
    // The served guide (a path on this service, resolved by the client like the successor) or an
    // operator's absolute URL; {anchor} becomes the section of the route called.
    migrationGuide: z
      .string()
      .regex(/^(https?:\/\/|\/(?!\/))[^\s<>"]*$/, 'must be an http(s) URL or a path on this service such as /docs/migration, without spaces, <, > or "')
      .refine((link) => link.startsWith('/') || URL.canParse(link), 'must be a valid URL'),
  }),
  prefix: z.string().regex(/^(\/[A-Za-z0-9._-]+)*$/, 'must be empty or a path such as /v2, without a trailing slash'),
  listCeiling: z.number().int().positive(),
  cutover: z
    .strictObject({
      quietDays: z.number().int().positive(),
      autoDisable: z.boolean().default(false),
      checkEveryMinutes: z.number().positive().default(60),
    })
    .default({ quietDays: DEFAULT_QUIET_DAYS, autoDisable: false, checkEveryMinutes: 60 }),
});

export type ScopeStatus = z.output<typeof ScopeEntrySchema>['status'];

export interface ScopeEntry {
  /** A v2 scope, or a prefix ending in `.*` matching every scope under it. */
  name: string;
  status: ScopeStatus;
  /** The v4 capability of the spec's mapping table; undefined when there is no v4 successor. */
  capability: Capability | undefined;
  endpoints: { method: V2Method; path: string }[];
  note: string | undefined;
  reason: string | undefined;
  instead: string | undefined;
  /**
   * Everything a bridge key needs to serve this scope's routes: the capability, plus those of
   * the lookups (teamId ↔ teamName reads the teams).
   */
  bridgeCapabilities: Capability[];
}

type V2Method = z.output<typeof V2Method>;
interface RouteCommon {
  method: V2Method;
  path: string;
  scope: string;
  guide: RouteGuide | undefined;
}
export type Route =
  | (RouteCommon & { kind: 'v4'; request: Transform[]; operation: string; response: Transform[]; compare: CompareRules })
  | (RouteCommon & { kind: 'passthrough' });

export interface Sunset {
  deprecation: Date;
  sunset: Date;
  brownouts: { start: Date; end: Date }[];
  links: { successor: string; migrationGuide: string };
  prefix: string;
  listCeiling: number;
  /** The cutover of each legacy key to its successor v4 key (see cutover.ts). */
  cutover: {
    /** No v2 call for this many days makes a key quiet. */
    quietDays: number;
    /** Disable a quiet key whose successor works, checked every checkEveryMinutes; off by default. */
    autoDisable: boolean;
    checkEveryMinutes: number;
  };
}

export interface Mappings {
  scopes: ScopeEntry[];
  routes: Route[];
  sunset: Sunset;
}

/**
 * `value` with every string internalized. The parser's strings are slices of the file's text, and one
 * character beyond Latin-1 anywhere in a file (a → in a comment) makes that text, and so every slice
 * of it, a two-byte string: a perf profile of a v2 read showed V8 comparing, hashing and copying such
 * strings on its slow paths (the Link header, the renamed fields' names). Decoded afresh, a string is
 * one-byte where its characters allow; made a property key, it is interned and compares by identity.
 */
function interned(value: unknown): unknown {
  if (typeof value === 'string') return Object.keys({ [Buffer.from(value, 'utf8').toString('utf8')]: 0 })[0];
  if (Array.isArray(value)) return value.map(interned);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, interned(inner)]));
  }
  return value;
}

function readYaml(dir: string, file: string): unknown {
  let text: string;
  try {
    text = readFileSync(join(dir, file), 'utf8');
  } catch (error) {
    throw new MappingError(`${file}: cannot be read from ${dir}: ${(error as Error).message}`);
  }
  try {
    const doc = interned(parse(text));
    // Top-level `x-` keys only hold YAML anchors shared by the entries.
    if (doc && typeof doc === 'object' && !Array.isArray(doc)) {
      return Object.fromEntries(Object.entries(doc).filter(([key]) => !key.startsWith('x-')));
    }
    return doc;
  } catch (error) {
    throw new MappingError(`${file}: is not valid YAML: ${(error as Error).message}`);
  }
}

function validate<S extends z.ZodType>(schema: S, doc: unknown, file: string): z.output<S> {
  const result = schema.safeParse(doc);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(file)'}: ${issue.message}`);
  throw new MappingError(`${file}: ${problems.join('; ')}`);
}

const endpointKey = (method: string, path: string) => `${method} ${path}`;

function parseEndpoint(text: string): { method: V2Method; path: string } {
  const [method, path] = text.split(' ') as [V2Method, string];
  return { method, path };
}

// Which entry rules a scope (an exact entry wins over a `prefix.*` wildcard), shared with the CLI's audit.
export { entryMatches, scopeEntryFor };

function knownOperation(name: string, where: string): AnyOperation {
  const op = domainOperationByName(name);
  if (!op) throw new MappingError(`${where}: names v4 operation "${name}", which is not in the operation table`);
  return op;
}

/** The capabilities the route's calls need besides its scope's: those of its lookups. */
function checkOperations(route: Route & { kind: 'v4' }, entry: ScopeEntry, where: string): Capability[] {
  const primary = [route.operation];
  const lookups: Capability[] = [];
  for (const t of [...route.request, ...route.response]) {
    if (t.op === 'follow_up') primary.push(t.operation);
    if (t.op === 'lookup') {
      const op = knownOperation(t.operation, `${where}: lookup ${t.from} → ${t.to}`);
      if (!op.readOnly) throw new MappingError(`${where}: lookup ${t.from} → ${t.to} uses "${op.name}", which is not a read`);
      if (op.capability) lookups.push(op.capability);
    }
    if (t.op === 'unwrap_list') {
      const last = knownOperation(route.operation, where);
      const shape = last.output instanceof z.ZodObject ? last.output.shape : {};
      if (!(t.key in shape) || !('nextCursor' in shape)) {
        throw new MappingError(`${where}: unwrap_list key "${t.key}" is not the list of ${last.name}'s envelope`);
      }
    }
  }
  // The envelope is read as v4 answered it; a transform before would change what it reads.
  if (route.response.findIndex((t) => t.op === 'unwrap_list') > 0) {
    throw new MappingError(`${where}: unwrap_list must be the first response transform: it reads the list envelope as v4 answers it`);
  }
  for (const name of primary) {
    const op = knownOperation(name, where);
    // A v2 read is answered as one: run again when a credential changed under it (decision record 0008).
    if (route.method === 'GET' && !op.readOnly) throw new MappingError(`${where}: a GET is answered as a read, but it calls "${name}", which writes`);
    // The map must agree with the spec's table: the scope's capability is what the call checks.
    if (op.capability !== entry.capability) {
      throw new MappingError(
        `${where}: calls "${name}", which needs ${op.capability ?? 'no capability'}, but scope ${entry.name} maps to ${entry.capability ?? 'nothing'} in ${SCOPES_FILE}`,
      );
    }
  }
  return lookups;
}

/** Every property name a schema declares, at any depth (list elements and union branches included). */
function propertyNames(node: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) propertyNames(item, into);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value && typeof value === 'object') for (const name of Object.keys(value)) into.add(name);
      propertyNames(value, into);
    }
  }
  return into;
}

/** The guide's example fills every path parameter, and its new fields are fields of the route's v4 operation. */
function checkGuide(route: Route, where: string): void {
  if (!route.guide) return;
  const { example, new_in_v4 } = route.guide;
  const missing = pathParams(route.path).find((param) => example[param] === undefined);
  if (missing) throw new MappingError(`${where}: guide.example lacks the path parameter ${missing}`);
  if (new_in_v4.length === 0) return;
  if (route.kind !== 'v4') throw new MappingError(`${where}: guide.new_in_v4 names v4 fields, but the route has no v4 successor`);
  const known = new Set<string>();
  const op = knownOperation(route.operation, where);
  for (const io of ['input', 'output'] as const) propertyNames(z.toJSONSchema(op[io], { io, unrepresentable: 'any' }), known);
  const unknown = new_in_v4.find((field) => !known.has(field));
  if (unknown) throw new MappingError(`${where}: guide.new_in_v4 names ${unknown}, which the route's v4 operation neither takes nor answers`);
}

function checkSunset(sunset: Sunset): void {
  const iso = (d: Date) => d.toISOString();
  if (sunset.sunset < sunset.deprecation) {
    throw new MappingError(`${SUNSET_FILE}: sunset ${iso(sunset.sunset)} is earlier than the deprecation date ${iso(sunset.deprecation)}`);
  }
  sunset.brownouts.forEach(({ start, end }, i) => {
    const where = `${SUNSET_FILE}: brownouts.${i} (${iso(start)} – ${iso(end)})`;
    if (end <= start) throw new MappingError(`${where}: end must be after start`);
    if (start < sunset.deprecation || end > sunset.sunset) {
      throw new MappingError(`${where}: must lie between the deprecation date ${iso(sunset.deprecation)} and the sunset ${iso(sunset.sunset)}`);
    }
  });
}

/** The maps a start or an operator command serves: a wrong or missing map stops it, since the gateway would serve v2 wrongly. */
export function loadMappingsToServe(dir: string = defaultMappingsDir()): Mappings {
  try {
    return loadMappings(dir);
  } catch (error) {
    if (error instanceof MappingError) throw new ConfigError(`The v2 maps in ${dir} are unusable: ${error.message}`);
    throw error;
  }
}

/** Reads, validates and cross-checks the three maps of `dir`; throws MappingError on the first fault. */
export function loadMappings(dir: string): Mappings {
  const scopesFile = validate(ScopesFileSchema, readYaml(dir, SCOPES_FILE), SCOPES_FILE);
  const routesFile = validate(RoutesFileSchema, readYaml(dir, ROUTES_FILE), ROUTES_FILE);
  const sunset: Sunset = validate(SunsetFileSchema, readYaml(dir, SUNSET_FILE), SUNSET_FILE);
  checkSunset(sunset);

  const scopes: ScopeEntry[] = Object.entries(scopesFile.scopes).map(([name, e]) => ({
    name,
    status: e.status,
    capability: e.capability,
    endpoints: e.endpoints.map(parseEndpoint),
    note: e.note,
    reason: e.reason,
    instead: e.instead,
    bridgeCapabilities: e.capability ? [e.capability] : [],
  }));

  const routes: Route[] = routesFile.routes.map(({ method, path, scope, v4, request, response, compare, guide }) =>
    v4
      ? { kind: 'v4', method, path, scope, guide, request, operation: v4, response, compare: compare ?? NO_COMPARE_RULES }
      : { kind: 'passthrough', method, path, scope, guide },
  );

  const seen = new Map<string, number>();
  routes.forEach((route, i) => {
    const key = endpointKey(route.method, route.path);
    const where = `${ROUTES_FILE}: routes.${i} (${key})`;
    const earlier = seen.get(key);
    if (earlier !== undefined) throw new MappingError(`${where}: duplicates routes.${earlier}; each method and path appears once`);
    seen.set(key, i);

    const entry = scopeEntryFor(scopes, route.scope);
    if (!entry) throw new MappingError(`${where}: scope ${route.scope} has no entry in ${SCOPES_FILE} (a route has no rule)`);
    if (!entry.endpoints.some((e) => endpointKey(e.method, e.path) === key)) {
      throw new MappingError(`${where}: is not among the endpoints of scope ${entry.name} in ${SCOPES_FILE}`);
    }
    if ((route.kind === 'passthrough') !== (entry.status === 'no-successor')) {
      throw new MappingError(
        `${where}: scope ${entry.name} is ${entry.status}, so the route must ${entry.status === 'no-successor' ? 'be passthrough: true' : 'name its v4 operation'}`,
      );
    }
    checkGuide(route, where);
    if (route.kind === 'v4') {
      for (const cap of checkOperations(route, entry, where)) {
        if (!entry.bridgeCapabilities.includes(cap)) entry.bridgeCapabilities.push(cap);
      }
    }
  });

  for (const entry of scopes) {
    for (const { method, path } of entry.endpoints) {
      const key = endpointKey(method, path);
      const route = routes.find((r) => endpointKey(r.method, r.path) === key);
      if (!route || !entryMatches(entry.name, route.scope)) {
        throw new MappingError(`${SCOPES_FILE}: scope ${entry.name} lists ${key}, but no route of ${ROUTES_FILE} serves it for that scope (a rule matches no route)`);
      }
    }
  }

  return { scopes, routes, sunset };
}

/**
 * The least v4 capability set a bridge key needs to serve these v2 scopes, in table order.
 * Scopes without a v4 successor contribute nothing; an unknown scope is refused.
 */
export function capabilitiesForScopes(mappings: Mappings, scopes: readonly string[]): Capability[] {
  const needed = new Set<Capability>();
  for (const scope of scopes) {
    const entry = scopeEntryFor(mappings.scopes, scope);
    if (!entry) throw new MappingError(`unknown v2 scope "${scope}": it is not in ${SCOPES_FILE}`);
    for (const cap of entry.bridgeCapabilities) needed.add(cap);
  }
  return CAPABILITIES.filter((cap) => needed.has(cap));
}
