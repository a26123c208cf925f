import { CAPABILITIES, type Capability } from '../access/capabilities.js';
import { AppError } from '../kit/errors.js';
import { OWNER_PLAN_PATH } from '../legacy/deprecation.js';
import { MAX_PAGE_SIZE } from '../operations/common.js';
import { domainOperationByName } from '../operations/domain-table.js';
import type { AnyOperation } from '../operations/operation.js';
import { fillPath, pathParams } from '../kit/path-template.js';
import { z } from 'zod';
import { MappingError, ROUTES_FILE, scopeEntryFor, type Mappings, type Route, type ScopeStatus, type Transform } from '../legacy/mappings.js';
import { applyLocal, splitFollowUp, type Doc, type FollowUp } from '../legacy/translate.js';

/*
 * The v2 → v4 migration guide, derived from the maps: for every v2 endpoint the v4 calls that
 * replace it, every field change both ways (read off the transforms the gateway runs), the
 * capabilities the v4 key needs, and an example pair: the route's guide.example as a v2 curl line,
 * and that same document put through the route's request transforms as the v4 curl lines.
 */

type Method = Route['method'];
type V4Route = Extract<Route, { kind: 'v4' }>;

/** A v4 operation as the guide names it. */
export interface GuideCall {
  operation: string;
  method: Method;
  /** Express-style, e.g. /v4/employees/:id. */
  path: string;
  title: string;
  capability: Capability | null;
}

export type ChangeKind =
  | 'renamed'
  | 'looked_up'
  | 'moved'
  | 'no_longer_required'
  | 'not_in_v4'
  | 'second_call'
  | 'set_by_endpoint'
  | 'list_envelope'
  | 'whole_record'
  | 'new_in_v4';

export interface FieldChange {
  /** request: what the integration sends; response: what it reads back. */
  direction: 'request' | 'response';
  kind: ChangeKind;
  /** One sentence; field names, calls and values in `backticks`. */
  text: string;
}

/** One curl call of an example; `$NAME` values are shell variables. */
export interface ExampleCall {
  method: Method;
  /** The path with its parameters filled in. */
  path: string;
  query: Doc;
  body: Doc | undefined;
  /** The shell variable this call's answer sets: a lookup's value, or the id a second call needs. */
  sets: { variable: string; field: string } | undefined;
  /** Runs in bash with BASE_URL, V2_KEY or V4_KEY and the example's variables set (and jq where `sets`). */
  curl: string;
}

export interface GuideExample {
  /** The shell variables the reader sets (ids from their own data), besides BASE_URL and the keys. */
  variables: string[];
  v2: ExampleCall;
  /** In order; empty when the endpoint has no v4 successor. */
  v4: ExampleCall[];
}

export interface GuideEndpoint {
  /** The id of the endpoint's section of the guide page, and of its v2 OpenAPI operation. */
  anchor: string;
  method: Method;
  /** As served, prefix included: /v2/employees/:id. */
  path: string;
  scope: string;
  status: ScopeStatus;
  /** The v4 calls replacing it, in order (a second call included); empty without a v4 successor. */
  successor: GuideCall[];
  /** The capabilities the v4 key needs for those calls, in the capability table's order. */
  capabilities: Capability[];
  /** Also needed to look up what v4 takes instead of a v2 value (a team's name for its id). */
  lookupCapabilities: Capability[];
  /** How the v4 capability is broader, or why the scope has no group of its own. */
  note: string | undefined;
  noSuccessor: { reason: string; instead: string | undefined } | undefined;
  changes: FieldChange[];
  /** Absent when the route declares no guide.example. */
  example: GuideExample | undefined;
}

export interface MigrationGuide {
  deprecation: string;
  sunset: string;
  brownouts: { start: string; end: string }[];
  /** Where a legacy key reads its own plan (GET, with the key itself). */
  ownerPlan: string;
  /** The most records a v4 list page holds. */
  pageSize: number;
  endpoints: GuideEndpoint[];
}

/** The section of the guide for a route: `GET /employees/:id` → `get-employees-id`. */
export const routeAnchor = (route: Pick<Route, 'method' | 'path'>): string =>
  `${route.method}${route.path}`.toLowerCase().replace(/[^a-z0-9]+/g, '-');

const SHELL_VARIABLE = /^\$([A-Z][A-Z0-9_]*)$/;
/** `teamName` → `TEAM_NAME`. */
const shellName = (field: string) => field.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
const variableOf = (value: unknown): string | undefined => (typeof value === 'string' ? SHELL_VARIABLE.exec(value)?.[1] : undefined);

function variablesIn(value: unknown, into: string[] = []): string[] {
  const variable = variableOf(value);
  if (variable !== undefined && !into.includes(variable)) into.push(variable);
  if (Array.isArray(value)) for (const item of value) variablesIn(item, into);
  else if (value && typeof value === 'object') for (const item of Object.values(value)) variablesIn(item, into);
  return into;
}

const code = (text: string) => `\`${text}\``;
const codeList = (fields: readonly string[]) => fields.map(code).join(', ');

function operation(name: string): AnyOperation {
  const op = domainOperationByName(name);
  // The loader has checked every operation the maps name.
  if (!op) throw new MappingError(`${ROUTES_FILE}: names v4 operation "${name}", which is not in the operation table`);
  return op;
}

const callOf = (name: string): GuideCall => {
  const { method, path, title, capability } = operation(name);
  return { operation: name, method, path, title, capability };
};
const callRef = (name: string) => {
  const { method, path } = operation(name);
  return `${code(name)} (${code(`${method} ${path}`)})`;
};

/* --- field changes ------------------------------------------------------------------------ */

/** Where a field travels on one side of the call: in the path, the query string or the body. */
interface Side {
  method: Method;
  params: string[];
}

function located(field: string, side: Side): string {
  const where = side.params.includes(field) ? 'path parameter' : side.method === 'GET' ? 'query parameter' : 'body field';
  return `${where} ${code(field)}`;
}

function requestChange(t: Transform, v2: Side, v4: Side): FieldChange | undefined {
  const change = (kind: ChangeKind, text: string): FieldChange => ({ direction: 'request', kind, text });
  switch (t.op) {
    case 'rename':
      // The same path position under another name in the URL template changes nothing for the caller.
      if (v2.params.includes(t.from) && v4.params.includes(t.to)) return undefined;
      return change('renamed', `The v2 ${located(t.from, v2)} is the v4 ${located(t.to, v4)}.`);
    case 'lookup':
      return change(
        'looked_up',
        `The v2 ${located(t.from, v2)} becomes the v4 ${located(t.to, v4)}: send the ${code(t.take)} that ${callRef(t.operation)} answers for that ${code(t.match)}.`,
      );
    case 'move_out_of':
      return change('moved', `v2 sent ${codeList(t.fields)} inside the ${code(t.from)} object; v4 takes them as ${v4.method === 'GET' ? 'query parameters' : 'body fields'} of their own.`);
    case 'require': {
      const fields = t.fields.map((field) => (t.within === undefined ? field : `${t.within}.${field}`));
      return change(
        'no_longer_required',
        t.allow_absent
          ? `v2 refused a null or empty ${codeList(fields)} (leaving it out was allowed); v4 does not require it.`
          : `v2 required ${codeList(fields)}; v4 does not.`,
      );
    }
    case 'refuse':
      return change('not_in_v4', `Not in v4: ${code(t.equals === undefined ? t.field : `${t.field}=${t.equals}`)}. ${t.message.replace(/\.$/, '')}.`);
    case 'follow_up':
      return change(
        'second_call',
        `v4 refuses ${codeList(t.fields)} in this call: send them in a second call, ${callRef(t.operation)}, with ${code('id')} set to the ${code(t.id_from)} the first call answered.`,
      );
    case 'set': {
      const when = t.when_present !== undefined ? ` when ${code(t.when_present)} is sent` : t.when_absent !== undefined ? ` when ${code(t.when_absent)} is not sent` : '';
      return change('set_by_endpoint', `v4 needs the ${located(t.field, v4)} set to ${code(JSON.stringify(t.value))}${when}: the v2 endpoint implied it.`);
    }
    default:
      // pick only drops what the v2 endpoint ignored; unwrap_list applies to answers.
      return undefined;
  }
}

function responseChange(t: Transform, listOperation: AnyOperation): FieldChange | undefined {
  const change = (kind: ChangeKind, text: string): FieldChange => ({ direction: 'response', kind, text });
  switch (t.op) {
    case 'unwrap_list': {
      const envelope = listOperation.output instanceof z.ZodObject ? Object.keys(listOperation.output.shape) : [t.key];
      return change(
        'list_envelope',
        `v2 answered a bare array of every record; v4 answers one page, ${code(`{ ${envelope.join(', ')} }`)}, of at most ${MAX_PAGE_SIZE} records in ${code(t.key)} (set ${code('limit')}): call again with ${code('cursor')} set to ${code('nextCursor')} until it is null.`,
      );
    }
    case 'rename':
      return change('renamed', `v4 answers ${code(t.from)} where v2 answered ${code(t.to)}.`);
    case 'lookup':
      return change('looked_up', `v4 answers ${code(t.from)} where v2 answered ${code(t.to)}, the ${code(t.take)} that ${callRef(t.operation)} answers for that ${code(t.match)}.`);
    case 'move_into':
      return change(
        'moved',
        `v4 answers ${codeList(t.fields)} as fields of the record; v2 answered them inside a ${code(t.into)} object${t.keep.length > 0 ? ` (and ${codeList(t.keep)} outside it too)` : ''}.`,
      );
    case 'pick':
      return change('whole_record', `v4 answers the whole record; v2 answered only ${codeList(t.fields)}.`);
    default:
      // The other transforms shape requests.
      return undefined;
  }
}

function changesOf(route: V4Route): FieldChange[] {
  const called = operation(route.operation);
  const v2: Side = { method: route.method, params: pathParams(route.path) };
  const v4: Side = { method: called.method, params: pathParams(called.path) };
  const changes = [
    ...route.request.map((t) => requestChange(t, v2, v4)),
    ...route.response.map((t) => responseChange(t, called)),
  ].filter((c): c is FieldChange => c !== undefined);
  const added = route.guide?.new_in_v4 ?? [];
  if (added.length > 0) {
    changes.push({ direction: route.method === 'GET' ? 'response' : 'request', kind: 'new_in_v4', text: `v4 adds ${codeList(added)}, which v2 did not have.` });
  }
  return changes;
}

/* --- examples ------------------------------------------------------------------------------ */

/** Inside double quotes the shell still expands `$`, backticks and backslashes: escape them. */
const doubleQuotedText = (text: string) => text.replace(/[\\"$`]/g, (c) => `\\${c}`);

/** A value as a double-quoted shell word: a `$NAME` value stays a variable, anything else is literal. */
function shellValue(prefix: string, value: unknown): string {
  const variable = variableOf(value);
  return `"${doubleQuotedText(prefix)}${variable === undefined ? doubleQuotedText(String(value)) : `$${variable}`}"`;
}

/** A JSON body as one shell word: single-quoted, or double-quoted when it holds variables. */
function shellJson(body: Doc): string {
  const json = JSON.stringify(body);
  // A whole-string "$NAME" value; a quote inside a JSON string is escaped, so it never matches there.
  const variables = [...json.matchAll(/(?<!\\)"\$([A-Z][A-Z0-9_]*)"/g)];
  if (variables.length === 0) return `'${json.replaceAll("'", `'\\''`)}'`;
  let word = '';
  let last = 0;
  for (const match of variables) {
    word += `${doubleQuotedText(json.slice(last, match.index))}\\"$${match[1]}\\"`;
    last = match.index + match[0].length;
  }
  return `"${word}${doubleQuotedText(json.slice(last))}"`;
}

function exampleCall(method: Method, template: string, doc: Doc, keyVariable: 'V2_KEY' | 'V4_KEY', sets?: ExampleCall['sets']): ExampleCall {
  // A value taken from an earlier call's answer stays its shell variable.
  const { path, rest } = fillPath(template, doc, (name, value) => {
    const variable = variableOf(value);
    return variable === undefined ? encodeURIComponent(String(value)) : `$${variable}`;
  });
  const query = method === 'GET' ? rest : {};
  const body = method === 'GET' ? undefined : rest;
  const words = ['curl -sS', ...(method === 'GET' ? (Object.keys(query).length > 0 ? ['-G'] : []) : [`-X ${method}`])];
  // Path segments are letters, digits and percent-encoded values: nothing the shell expands inside double quotes.
  words.push(`"$BASE_URL${path}"`, `-H "X-API-KEY: $${keyVariable}"`);
  for (const [name, value] of Object.entries(query)) words.push(`--data-urlencode ${shellValue(`${name}=`, value)}`);
  if (body !== undefined) words.push('-H "Content-Type: application/json"', `-d ${shellJson(body)}`);
  const line = words.join(' ');
  return { method, path, query, body, sets, curl: sets ? `${sets.variable}=$(${line} | jq -r .data.${sets.field})` : line };
}

function exampleOf(route: Route, prefix: string): GuideExample | undefined {
  if (!route.guide) return undefined;
  const { example } = route.guide;
  const variables = variablesIn(example);
  const v2 = exampleCall(route.method, `${prefix}${route.path}`, example, 'V2_KEY');
  if (route.kind === 'passthrough') return { variables, v2, v4: [] };

  // The request transforms the gateway runs, with lookups as calls setting a shell variable.
  const lookups: ExampleCall[] = [];
  const followUps: FollowUp[] = [];
  let doc: Doc = example;
  for (const t of route.request) {
    if (t.op === 'lookup') {
      if (doc[t.from] === undefined) continue;
      const { [t.from]: value, ...rest } = doc;
      const variable = shellName(t.to);
      const op = operation(t.operation);
      if (pathParams(op.path).includes(t.match)) {
        lookups.push(exampleCall(op.method, op.path, { [t.match]: value }, 'V4_KEY', { variable, field: t.take }));
      } else if (!variables.includes(variable)) {
        variables.push(variable);
      }
      doc = { ...rest, [t.to]: `$${variable}` };
    } else if (t.op === 'follow_up') {
      const { rest, followUp } = splitFollowUp(doc, t);
      if (followUp) followUps.push(followUp);
      doc = rest;
    } else if (t.op !== 'unwrap_list') {
      try {
        doc = applyLocal(t, doc);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        throw new MappingError(`${ROUTES_FILE}: ${route.method} ${route.path}: guide.example is refused by the route's own transforms: ${error.message}`);
      }
    }
  }
  const listed = route.response.some((t) => t.op === 'unwrap_list');
  const input = listed ? { ...doc, limit: MAX_PAGE_SIZE } : doc;
  const called = operation(route.operation);
  const idFrom = followUps[0]?.idFrom;
  const call = exampleCall(called.method, called.path, input, 'V4_KEY', idFrom === undefined ? undefined : { variable: `NEW_${shellName(idFrom)}`, field: idFrom });
  const seconds = followUps.map(({ operation: name, idFrom, fields }) => {
    const op = operation(name);
    return exampleCall(op.method, op.path, { ...fields, id: `$NEW_${shellName(idFrom)}` }, 'V4_KEY');
  });
  return { variables, v2, v4: [...lookups, call, ...seconds] };
}

/* --- the guide ------------------------------------------------------------------------------ */

/** The calls replacing the route, and those looking up what v4 takes instead of a v2 value. */
function callsOf(route: V4Route): { successor: string[]; lookups: string[] } {
  const successor = [route.operation, ...route.request.flatMap((t) => (t.op === 'follow_up' ? [t.operation] : []))];
  const lookups = route.request.flatMap((t) => (t.op === 'lookup' ? [t.operation] : []));
  return { successor: [...new Set(successor)], lookups };
}

const capabilitiesOf = (names: string[], except: Capability[] = []): Capability[] => {
  const needed = new Set(names.map((name) => operation(name).capability));
  return CAPABILITIES.filter((cap) => needed.has(cap) && !except.includes(cap));
};

function endpointOf(mappings: Mappings, route: Route): GuideEndpoint {
  const entry = scopeEntryFor(mappings.scopes, route.scope);
  // The loader refuses a route whose scope has no entry.
  if (!entry) throw new MappingError(`${ROUTES_FILE}: scope ${route.scope} has no entry`);
  const common = {
    anchor: routeAnchor(route),
    method: route.method,
    path: `${mappings.sunset.prefix}${route.path}`,
    scope: route.scope,
    status: entry.status,
    example: exampleOf(route, mappings.sunset.prefix),
  };
  if (route.kind === 'passthrough') {
    return {
      ...common,
      successor: [],
      capabilities: [],
      lookupCapabilities: [],
      note: undefined,
      noSuccessor: { reason: entry.reason ?? 'no v4 successor', instead: entry.instead },
      changes: [],
    };
  }
  const { successor, lookups } = callsOf(route);
  const capabilities = capabilitiesOf(successor);
  return {
    ...common,
    successor: successor.map(callOf),
    capabilities,
    lookupCapabilities: capabilitiesOf(lookups, capabilities),
    note: entry.note ?? entry.reason,
    noSuccessor: undefined,
    changes: changesOf(route),
  };
}

/** The guide of these maps; throws MappingError when an example contradicts its own route. */
export function buildMigrationGuide(mappings: Mappings): MigrationGuide {
  const endpoints = mappings.routes.map((route) => endpointOf(mappings, route));
  const anchors = new Map<string, string>();
  for (const { anchor, method, path } of endpoints) {
    const other = anchors.get(anchor);
    if (other) throw new MappingError(`${ROUTES_FILE}: ${method} ${path} and ${other} share the guide section "${anchor}"; rename a path`);
    anchors.set(anchor, `${method} ${path}`);
  }
  const { deprecation, sunset, brownouts, prefix } = mappings.sunset;
  return {
    deprecation: deprecation.toISOString(),
    sunset: sunset.toISOString(),
    brownouts: brownouts.map(({ start, end }) => ({ start: start.toISOString(), end: end.toISOString() })),
    ownerPlan: `${prefix}${OWNER_PLAN_PATH}`,
    pageSize: MAX_PAGE_SIZE,
    endpoints,
  };
}
