import { z } from 'zod';
import { AppError, badRequest, unprocessable } from '../kit/errors.js';
import { MAX_PAGE_SIZE } from '../operations/common.js';
import { domainOperationByName } from '../operations/domain-table.js';
import type { LookupTopic, Transform } from './mappings.js';
import { isJsonObject } from '../kit/json-object.js';

/*
 * The executors of the named transforms of mappings/v2-routes.yaml. The maps compose them; this
 * file knows no v2 endpoint. A Translation lives for one request: lookups are cached for the request,
 * and across requests where the map allows it (reuse_until_changed).
 */

export type Doc = Record<string, unknown>;

/** Calls a v4 operation with the bridge key; a v4 error is thrown as an AppError keeping its status, code and message. */
export type V4Caller = (operation: string, input: Doc) => Promise<unknown>;

/** A value at once, or its promise when it needs a v4 call: the common case (a cached lookup) needs none. */
type Eventually<T> = T | Promise<T>;

const then = <T, U>(value: Eventually<T>, next: (settled: T) => U): Eventually<U> =>
  value instanceof Promise ? value.then(next) : next(value);

/** Loads a lookup answer that later requests may reuse until `topic` changes; a cached one at once. */
export type SharedLookup = (topic: LookupTopic, key: string, load: () => Promise<unknown>) => Eventually<unknown>;

/** A second call holding fields the first one refused: its `id` is the first result's `idFrom`. */
export interface FollowUp {
  operation: string;
  idFrom: string;
  fields: Doc;
}

type Op<K extends Transform['op']> = Extract<Transform, { op: K }>;


function fieldError(field: string, rule: string, message: string): AppError {
  return badRequest('validation_failed', `Invalid request: ${field}: ${message}`, [{ field, rule, message }]);
}

/*
 * The transforms below change the fields they are given: the Translation hands them its own copy of
 * each record, made once, as a Map, and turns it back into a record at the end (toDoc). A removed
 * field is deleted, so one added again goes last, as in the guide, which makes a record per step.
 * CPU profiles of a v2 read showed why: one copy per transform cost more than the rest of the
 * translation; and a plain-object copy of a v4 record (over 16 fields) is a slow dictionary object
 * to V8, whose reads and writes by name cost the transforms more than a Map's.
 */
type Fields = Map<string, unknown>;

/**
 * A copy of `doc` for the transforms to change. `__proto__` is no field: a query string can send it
 * as an own key, and copied back into a record it would set the record's prototype.
 */
function fieldsOf(doc: Doc): Fields {
  const fields: Fields = new Map();
  for (const key of Object.keys(doc)) if (key !== '__proto__') fields.set(key, doc[key]);
  return fields;
}

/** The record of `fields` in the same order, less fields whose value is undefined (absent, as in JSON). */
function toDoc(fields: Fields): Doc {
  const doc: Doc = {};
  fields.forEach((value, key) => {
    if (value !== undefined) doc[key] = value;
  });
  return doc;
}

/** `field` removed and `to` set to `value`: last, unless the record already has it. */
function replaceField(fields: Fields, field: string, to: string, value: unknown): Fields {
  fields.delete(field);
  return fields.set(to, value);
}

function rename(fields: Fields, { from, to }: Op<'rename'>): Fields {
  const value = fields.get(from);
  return value === undefined ? fields : replaceField(fields, from, to, value);
}

function moveInto(fields: Fields, { into, fields: names, keep }: Op<'move_into'>): Fields {
  let moved: Doc | undefined;
  for (const name of names) {
    const value = fields.get(name);
    if (value === undefined) continue;
    (moved ??= {})[name] = value;
    if (!keep.includes(name)) fields.delete(name);
  }
  return moved ? fields.set(into, moved) : fields;
}

function moveOutOf(fields: Fields, { from, fields: names }: Op<'move_out_of'>): Fields {
  const inner = fields.get(from);
  if (inner === undefined) return fields;
  if (!isJsonObject(inner)) throw fieldError(from, 'object', 'must be an object');
  // Only the declared fields: anything else would land on the record itself (deliveryAddress.email).
  const stranger = Object.keys(inner).find((key) => !names.includes(key));
  if (stranger !== undefined) throw fieldError(`${from}.${stranger}`, 'unknown_field', `is not one of ${from}'s fields (${names.join(', ')})`);
  fields.delete(from);
  // The sub-object wins over a flat field of the same name: it is where v2 kept the value.
  for (const key of Object.keys(inner)) fields.set(key, inner[key]);
  return fields;
}

function set(fields: Fields, { field, value, when_present, when_absent }: Op<'set'>): Fields {
  if (when_present !== undefined && fields.get(when_present) === undefined) return fields;
  if (when_absent !== undefined && fields.get(when_absent) !== undefined) return fields;
  return fields.set(field, value);
}

function pick(fields: Fields, { fields: names }: Op<'pick'>): Fields {
  for (const key of fields.keys()) if (!names.includes(key)) fields.delete(key);
  return fields;
}

/** A sub-object that is absent is not checked: the rule is about its contents when it is sent. */
function requireFields(fields: Fields, { fields: names, within, allow_absent }: Op<'require'>): Fields {
  const inner = within === undefined ? undefined : fields.get(within);
  if (within !== undefined) {
    if (inner === undefined) return fields;
    if (!isJsonObject(inner)) throw fieldError(within, 'object', 'must be an object');
  }
  for (const name of names) {
    const value = isJsonObject(inner) ? inner[name] : fields.get(name);
    const path = within === undefined ? name : `${within}.${name}`;
    if (value === null || value === '' || (value === undefined && !allow_absent)) {
      throw fieldError(path, 'required', allow_absent ? 'may be left out, but not cleared' : 'is required');
    }
  }
  return fields;
}

/** A JSON value as text; String() would throw on an object whose own toString is not a function. */
const textOf = (value: unknown) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));

function refuse(fields: Fields, { field, equals, status, message }: Op<'refuse'>): Fields {
  const value = fields.get(field);
  if (value === undefined || (equals !== undefined && textOf(value) !== equals)) return fields;
  throw new AppError(status, 'unsupported_in_v2_gateway', message, [{ field, rule: 'refused', message }]);
}

/** The fields of `t.fields` that `fields` holds, taken out for a second call; none when it holds none. */
function holdBack(fields: Fields, t: Op<'follow_up'>): FollowUp | undefined {
  let held: Doc | undefined;
  for (const name of t.fields) {
    const value = fields.get(name);
    if (value === undefined) continue;
    (held ??= {})[name] = value;
    fields.delete(name);
  }
  return held && { operation: t.operation, idFrom: t.id_from, fields: held };
}

/**
 * `doc` split by a follow_up: the fields of `t.fields` it holds go to a second call (none when it
 * holds none), the rest stays in a fresh document. The guide shows the same split as the gateway runs.
 */
export function splitFollowUp(doc: Doc, t: Op<'follow_up'>): { rest: Doc; followUp?: FollowUp } {
  const fields = fieldsOf(doc);
  const followUp = holdBack(fields, t);
  return followUp ? { rest: toDoc(fields), followUp } : { rest: doc };
}

/** A transform that needs no v4 call, applied to one document (the migration guide applies them to its examples). */
export type LocalTransform = Exclude<Transform, Op<'lookup'> | Op<'unwrap_list'> | Op<'follow_up'>>;

/** `t` applied to a copy of `doc`, which stays as it was. */
export function applyLocal(t: LocalTransform, doc: Doc): Doc {
  return toDoc(applyToOwn(t, fieldsOf(doc)));
}

function applyToOwn(t: LocalTransform, fields: Fields): Fields {
  switch (t.op) {
    case 'rename':
      return rename(fields, t);
    case 'move_into':
      return moveInto(fields, t);
    case 'move_out_of':
      return moveOutOf(fields, t);
    case 'set':
      return set(fields, t);
    case 'pick':
      return pick(fields, t);
    case 'require':
      return requireFields(fields, t);
    case 'refuse':
      return refuse(fields, t);
  }
}

/** Per lookup transform: whether it gets its record by `match` (else it searches the list). */
const lookupReadsByGet = new WeakMap<Op<'lookup'>, boolean>();

/** Decided once per transform: a profile of a v2 read showed zod's instanceof check per call. */
function readsByGet(t: Op<'lookup'>): boolean {
  let byGet = lookupReadsByGet.get(t);
  if (byGet === undefined) {
    const input = domainOperationByName(t.operation)?.input;
    byGet = input instanceof z.ZodObject && t.match in input.shape;
    lookupReadsByGet.set(t, byGet);
  }
  return byGet;
}

/** The key of an operation's list envelope that holds the records (`teams`, `employees`, …). */
function listKeyOf(operation: string): string {
  const output = domainOperationByName(operation)?.output;
  const shape = output instanceof z.ZodObject ? (output.shape as Record<string, z.ZodType>) : {};
  const key = Object.keys(shape).find((name) => shape[name] instanceof z.ZodArray);
  if (!key) throw new Error(`v4 operation ${operation} does not answer a list envelope`);
  return key;
}

function tooLarge(count: number, ceiling: number, operation: string): AppError {
  return unprocessable(
    'v2_list_too_large',
    `This v2 list holds ${count} records, more than the ${ceiling} a v2 list may return (v2 lists are never truncated); use the v4 operation ${operation} with its cursor paging`,
    { count, ceiling },
  );
}

/**
 * A request's translation. Transforms run synchronously until one needs a v4 call: a CPU profile of
 * a v2 read showed a promise per transform costing more than the transforms themselves.
 */
export class Translation {
  private readonly lookups = new Map<string, Eventually<unknown>>();

  constructor(
    private readonly call: V4Caller,
    private readonly listCeiling: number,
    private readonly shared?: SharedLookup,
  ) {}

  /** Every record of a v4 list, page by page from `first`; fails past the ceiling rather than truncate. */
  async walkList(operation: string, input: Doc, key: string, first?: unknown): Promise<Doc[]> {
    const records: Doc[] = [];
    const pageInput = { ...input, limit: MAX_PAGE_SIZE };
    let page = first ?? (await this.call(operation, pageInput));
    for (;;) {
      if (!isJsonObject(page) || !Array.isArray(page[key])) throw new Error(`v4 operation ${operation} answered no "${key}" list`);
      const total = typeof page.totalCount === 'number' ? page.totalCount : 0;
      records.push(...(page[key] as Doc[]));
      if (Math.max(total, records.length) > this.listCeiling) throw tooLarge(Math.max(total, records.length), this.listCeiling, operation);
      if (typeof page.nextCursor !== 'string') return records;
      page = await this.call(operation, { ...pageInput, cursor: page.nextCursor });
    }
  }

  /** The v4 input of a v2 document, and the follow-up calls it needs. */
  async request(transforms: readonly Transform[], document: Doc): Promise<{ input: Doc; followUps: FollowUp[] }> {
    let fields = fieldsOf(document);
    const followUps: FollowUp[] = [];
    for (const t of transforms) {
      if (t.op === 'follow_up') {
        const followUp = holdBack(fields, t);
        if (followUp) followUps.push(followUp);
      } else if (t.op === 'unwrap_list') {
        throw new Error('unwrap_list applies to a v4 result, not to a request');
      } else {
        const next = this.apply(t, fields);
        fields = next instanceof Promise ? await next : next;
      }
    }
    return { input: toDoc(fields), followUps };
  }

  /** The v2 answer of a v4 result; `source` is the call that produced it, for walking further pages. */
  async response(transforms: readonly Transform[], result: unknown, source: { operation: string; input: Doc }): Promise<unknown> {
    let value = result;
    // Whether `value` holds this translation's copies (Fields, or an array of them), which transforms change.
    let own = false;
    for (const t of transforms) {
      if (t.op === 'unwrap_list') {
        value = await this.walkList(source.operation, source.input, t.key, value);
        own = false;
      } else if (t.op === 'follow_up') {
        throw new Error('follow_up applies to a request, not to a v4 result');
      } else if (Array.isArray(value)) {
        const applied = value.map((element: unknown) => this.apply(t, own ? (element as Fields) : fieldsOf(element as Doc)));
        value = applied.some((element) => element instanceof Promise) ? await Promise.all(applied) : applied;
        own = true;
      } else if (own || isJsonObject(value)) {
        const next = this.apply(t, own ? (value as Fields) : fieldsOf(value as Doc));
        value = next instanceof Promise ? await next : next;
        own = true;
      }
    }
    if (!own) return value;
    return Array.isArray(value) ? value.map((element: Fields) => toDoc(element)) : toDoc(value as Fields);
  }

  /** Applies `t` to `fields`, which must be this translation's own copy. */
  private apply(t: Exclude<Transform, Op<'unwrap_list'> | Op<'follow_up'>>, fields: Fields): Eventually<Fields> {
    return t.op === 'lookup' ? this.lookup(fields, t) : applyToOwn(t, fields);
  }

  /** Replaces `from` by `to`; null stays null (no team). Unknown in a get is the v4 404; unknown in a list is null. */
  private lookup(fields: Fields, t: Op<'lookup'>): Eventually<Fields> {
    const { from, to, operation, match, take } = t;
    const value = fields.get(from);
    if (value === undefined) return fields;
    if (value === null) return replaceField(fields, from, to, null);
    const record = readsByGet(t)
      ? this.cached(`${operation}:${match}:${textOf(value)}`, t, () => this.call(operation, { [match]: value }))
      : then(this.cached(`${operation}:${match}`, t, () => this.indexedList(operation, match)), (index) => (index as Map<unknown, Doc>).get(value));
    return then(record, (found) => replaceField(fields, from, to, isJsonObject(found) ? (found[take] ?? null) : null));
  }

  /** Every record of the list by its `match` field, the first of each value: a v2 list looks up every record. */
  private async indexedList(operation: string, match: string): Promise<Map<unknown, Doc>> {
    const index = new Map<unknown, Doc>();
    for (const record of await this.walkList(operation, {}, listKeyOf(operation))) {
      if (!index.has(record[match])) index.set(record[match], record);
    }
    return index;
  }

  /** `load()`'s answer, once per translation; shared with later requests where the transform allows it. */
  private cached(key: string, t: Op<'lookup'>, load: () => Promise<unknown>): Eventually<unknown> {
    if (this.lookups.has(key)) return this.lookups.get(key);
    const topic = t.reuse_until_changed;
    const loaded = topic !== undefined && this.shared ? this.shared(topic, key, load) : load();
    this.lookups.set(key, loaded);
    return loaded;
  }
}
