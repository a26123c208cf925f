import { z } from 'zod';
import { AppError, badRequest, unprocessable } from '../errors.js';
import { MAX_PAGE_SIZE } from '../operations/common.js';
import { domainOperationByName } from '../operations/domain-table.js';
import type { LookupTopic, Transform } from './mappings.js';
import { isJsonObject } from '../json-object.js';

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
 * The transforms below change the document they are given: the Translation hands them its own
 * shallow copy, made once per record. They remove a field by setting it to undefined, which counts
 * as absent, and the Translation drops such fields in one last copy (withoutRemoved). A CPU profile
 * of a v2 read showed why: one copy per transform, or `delete` on the copy (which turns a record
 * into a slow dictionary object), each cost more than the rest of the translation.
 */

/**
 * A copy for the transforms to change. Object.assign rather than a spread: adding fields to a
 * spread copy of a database row was several times slower in a micro-benchmark.
 */
const ownCopy = (doc: Doc): Doc => Object.assign({}, doc);

/** `doc` less its removed (undefined) fields and those `drop` names, as a fresh object in the same order. */
function withoutRemoved(doc: Doc, drop: readonly string[] = []): Doc {
  const kept: Doc = {};
  for (const key of Object.keys(doc)) {
    const value = doc[key];
    if (value !== undefined && !drop.includes(key)) kept[key] = value;
  }
  return kept;
}

/** `field` removed and `to` set to `value`: last, unless `doc` already has it. */
function replaceField(doc: Doc, field: string, to: string, value: unknown): Doc {
  doc[field] = undefined;
  doc[to] = value;
  return doc;
}

function rename(doc: Doc, { from, to }: Op<'rename'>): Doc {
  return doc[from] === undefined ? doc : replaceField(doc, from, to, doc[from]);
}

function moveInto(doc: Doc, { into, fields, keep }: Op<'move_into'>): Doc {
  let moved: Doc | undefined;
  for (const field of fields) {
    if (doc[field] === undefined) continue;
    (moved ??= {})[field] = doc[field];
    if (!keep.includes(field)) doc[field] = undefined;
  }
  if (moved) doc[into] = moved;
  return doc;
}

function moveOutOf(doc: Doc, { from, fields }: Op<'move_out_of'>): Doc {
  const inner = doc[from];
  if (inner === undefined) return doc;
  if (!isJsonObject(inner)) throw fieldError(from, 'object', 'must be an object');
  // Only the declared fields: anything else would land on the record itself (deliveryAddress.email).
  const stranger = Object.keys(inner).find((key) => !fields.includes(key));
  if (stranger !== undefined) throw fieldError(`${from}.${stranger}`, 'unknown_field', `is not one of ${from}'s fields (${fields.join(', ')})`);
  doc[from] = undefined;
  // The sub-object wins over a flat field of the same name: it is where v2 kept the value.
  return Object.assign(doc, inner);
}

function set(doc: Doc, { field, value, when_present, when_absent }: Op<'set'>): Doc {
  if (when_present !== undefined && doc[when_present] === undefined) return doc;
  if (when_absent !== undefined && doc[when_absent] !== undefined) return doc;
  doc[field] = value;
  return doc;
}

function pick(doc: Doc, { fields }: Op<'pick'>): Doc {
  for (const key of Object.keys(doc)) if (!fields.includes(key)) doc[key] = undefined;
  return doc;
}

/** A sub-object that is absent is not checked: the rule is about its contents when it is sent. */
function requireFields(doc: Doc, { fields, within, allow_absent }: Op<'require'>): Doc {
  const target = within === undefined ? doc : doc[within];
  if (within !== undefined && target === undefined) return doc;
  if (!isJsonObject(target)) throw fieldError(within ?? '(body)', 'object', 'must be an object');
  for (const field of fields) {
    const value = target[field];
    const path = within === undefined ? field : `${within}.${field}`;
    if (value === null || value === '' || (value === undefined && !allow_absent)) {
      throw fieldError(path, 'required', allow_absent ? 'may be left out, but not cleared' : 'is required');
    }
  }
  return doc;
}

function refuse(doc: Doc, { field, equals, status, message }: Op<'refuse'>): Doc {
  const value = doc[field];
  if (value === undefined || (equals !== undefined && String(value) !== equals)) return doc;
  throw new AppError(status, 'unsupported_in_v2_gateway', message, [{ field, rule: 'refused', message }]);
}

/**
 * `doc` split by a follow_up: the fields of `t.fields` it holds go to a second call (none when it
 * holds none), the rest stays in a fresh document. The guide shows the same split as the gateway runs.
 */
export function splitFollowUp(doc: Doc, t: Op<'follow_up'>): { rest: Doc; followUp?: FollowUp } {
  const held = t.fields.filter((field) => doc[field] !== undefined);
  if (held.length === 0) return { rest: doc };
  const fields = Object.fromEntries(held.map((field) => [field, doc[field]]));
  return { rest: withoutRemoved(doc, held), followUp: { operation: t.operation, idFrom: t.id_from, fields } };
}

/** A transform that needs no v4 call, applied to one document (the migration guide applies them to its examples). */
export type LocalTransform = Exclude<Transform, Op<'lookup'> | Op<'unwrap_list'> | Op<'follow_up'>>;

/** `t` applied to a copy of `doc`, which stays as it was. */
export function applyLocal(t: LocalTransform, doc: Doc): Doc {
  return withoutRemoved(applyToOwn(t, ownCopy(doc)));
}

function applyToOwn(t: LocalTransform, doc: Doc): Doc {
  switch (t.op) {
    case 'rename':
      return rename(doc, t);
    case 'move_into':
      return moveInto(doc, t);
    case 'move_out_of':
      return moveOutOf(doc, t);
    case 'set':
      return set(doc, t);
    case 'pick':
      return pick(doc, t);
    case 'require':
      return requireFields(doc, t);
    case 'refuse':
      return refuse(doc, t);
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
    let doc = ownCopy(document);
    const followUps: FollowUp[] = [];
    for (const t of transforms) {
      if (t.op === 'follow_up') {
        const { rest, followUp } = splitFollowUp(doc, t);
        if (followUp) followUps.push(followUp);
        doc = rest;
      } else if (t.op === 'unwrap_list') {
        throw new Error('unwrap_list applies to a v4 result, not to a request');
      } else {
        const next = this.apply(t, doc);
        doc = next instanceof Promise ? await next : next;
      }
    }
    return { input: withoutRemoved(doc), followUps };
  }

  /** The v2 answer of a v4 result; `source` is the call that produced it, for walking further pages. */
  async response(transforms: readonly Transform[], result: unknown, source: { operation: string; input: Doc }): Promise<unknown> {
    let value = result;
    // Whether the records in `value` are this translation's copies, which transforms may change.
    let own = false;
    for (const t of transforms) {
      if (t.op === 'unwrap_list') {
        value = await this.walkList(source.operation, source.input, t.key, value);
        own = false;
      } else if (t.op === 'follow_up') {
        throw new Error('follow_up applies to a request, not to a v4 result');
      } else if (Array.isArray(value)) {
        const applied = value.map((element: Doc) => this.apply(t, own ? element : ownCopy(element)));
        value = applied.some((element) => element instanceof Promise) ? await Promise.all(applied) : applied;
        own = true;
      } else if (isJsonObject(value)) {
        const next = this.apply(t, own ? value : ownCopy(value));
        value = next instanceof Promise ? await next : next;
        own = true;
      }
    }
    if (!own) return value;
    return Array.isArray(value) ? value.map((element: Doc) => withoutRemoved(element)) : withoutRemoved(value as Doc);
  }

  /** Applies `t` to `doc`, which must be this translation's own copy. */
  private apply(t: Exclude<Transform, Op<'unwrap_list'> | Op<'follow_up'>>, doc: Doc): Eventually<Doc> {
    return t.op === 'lookup' ? this.lookup(doc, t) : applyToOwn(t, doc);
  }

  /** Replaces `from` by `to`; null stays null (no team). Unknown in a get is the v4 404; unknown in a list is null. */
  private lookup(doc: Doc, t: Op<'lookup'>): Eventually<Doc> {
    const { from, to, operation, match, take, reuse_until_changed } = t;
    const value = doc[from];
    if (value === undefined) return doc;
    if (value === null) return replaceField(doc, from, to, null);
    const shared = reuse_until_changed === undefined ? undefined : this.shared;
    const cached = (key: string, load: () => Promise<unknown>) => this.cached(key, shared ? () => shared(reuse_until_changed!, key, load) : load);
    const record = readsByGet(t)
      ? cached(`${operation}:${match}:${String(value)}`, () => this.call(operation, { [match]: value }))
      : then(cached(`${operation}:${match}`, () => this.indexedList(operation, match)), (index) => (index as Map<unknown, Doc>).get(value));
    return then(record, (found) => replaceField(doc, from, to, isJsonObject(found) ? (found[take] ?? null) : null));
  }

  /** Every record of the list by its `match` field, the first of each value: a v2 list looks up every record. */
  private async indexedList(operation: string, match: string): Promise<Map<unknown, Doc>> {
    const index = new Map<unknown, Doc>();
    for (const record of await this.walkList(operation, {}, listKeyOf(operation))) {
      if (!index.has(record[match])) index.set(record[match], record);
    }
    return index;
  }

  private cached(key: string, load: () => Eventually<unknown>): Eventually<unknown> {
    if (this.lookups.has(key)) return this.lookups.get(key);
    const loaded = load();
    this.lookups.set(key, loaded);
    return loaded;
  }
}
