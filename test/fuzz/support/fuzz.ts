import fc from 'fast-check';
import { expect } from 'vitest';
import { fillPath as fillPathTemplate } from '../../../src/kit/path-template.js';

/*
 * The fuzz suites' shared frame: one seed per run (random unless FUZZ_SEED is set), bounded runs,
 * hostile values, and the checks every answer must pass whatever the input.
 */

export const FUZZ_SEED = process.env.FUZZ_SEED === undefined ? Date.now() ^ (Math.random() * 0x7fffffff) : Number(process.env.FUZZ_SEED);
/** Multiplies every property's run count: FUZZ_RUNS_FACTOR=10 for a longer local hunt. */
const RUNS_FACTOR = Number(process.env.FUZZ_RUNS_FACTOR ?? 1);

/**
 * fc.assert with our seed and a bounded run count. On failure the error names the environment
 * that replays it: the seed reproduces the generated inputs, FUZZ_PATH jumps to the shrunk case.
 */
export async function fuzz<T>(property: fc.IAsyncPropertyWithHooks<T> | fc.IAsyncProperty<T>, numRuns: number): Promise<void> {
  const path = process.env.FUZZ_PATH;
  try {
    await fc.assert(property, {
      seed: FUZZ_SEED,
      numRuns: Math.max(1, Math.round(numRuns * RUNS_FACTOR)),
      ...(path ? { path } : {}),
      endOnFailure: false,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const found = /path: "([^"]*)"/.exec(message)?.[1];
    const replay = `FUZZ_SEED=${FUZZ_SEED}${found ? ` FUZZ_PATH=${found}` : ''}`;
    throw new Error(`${message}\n\nReproduce with: ${replay} npx vitest run test/fuzz`, { cause: error });
  }
}

/** SQL injection, template injection, path traversal and header injection attempts. */
export const INJECTIONS = [
  "' OR 1=1--",
  "'); DROP TABLE employees;--",
  "'); DROP TABLE teams;--",
  "\"; DROP TABLE devices; --",
  "1; SELECT pg_sleep(5)--",
  "' UNION SELECT secret_hash FROM api_keys--",
  '%',
  '_',
  '%_%',
  '\\',
  '\\%',
  "\\'",
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '{{7*7}}',
  '${7*7}',
  '#{7*7}',
  '../../etc/passwd',
  '..%2F..%2Fetc%2Fpasswd',
  'a\r\nSet-Cookie: injected=1',
  'a\r\n\r\nHTTP/1.1 200 OK',
  '__proto__',
  'constructor',
  '$where',
  '{"$gt":""}',
];

/** Unicode that breaks naive handling: control, bidi, zero-width, surrogates, combining, astral. */
export const UNICODE_EDGES = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00y',
  '\u202eevil\u202c',
  '\u200b\u200c\u200d\ufeff',
  '👩‍👩‍👧‍👦',
  '🏳️‍🌈',
  'e\u0301\u0301\u0301\u0301',
  'Z̴̡̛͖̈́a̷l̸g̶o̵',
  '\u0007\u001b[31m',
  '\u2028\u2029',
  'İıßẞ',
  '\uffff\ufffe',
  ' ',
  '',
];

/** One hostile string: a fixed attack, an edge, arbitrary code points (lone surrogates included), an overlong one, or a mix. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...INJECTIONS) },
  { weight: 3, arbitrary: fc.constantFrom(...UNICODE_EDGES) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 201, max: 20_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...INJECTIONS, ...UNICODE_EDGES), { minLength: 2, maxLength: 4 }).map((parts) => parts.join('')) },
);

/** Any JSON value, with hostile strings among its leaves. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  hostileString,
  fc.constantFrom(null, true, false, 0, -1, 1e308, -1e-308, 2 ** 53 + 1, [], {}),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
);

export type Doc = Record<string, unknown>;

/** A mutation of a valid input: one field wrong-typed, hostile, removed, or one unknown field added. */
export function mutationOf(valid: Doc): fc.Arbitrary<Doc> {
  const fields = Object.keys(valid);
  const replace = (value: fc.Arbitrary<unknown>) =>
    fields.length === 0
      ? value.map((v) => ({ unexpected: v }))
      : fc.tuple(fc.constantFrom(...fields), value).map(([field, v]) => ({ ...valid, [field]: v }));
  return fc.oneof(
    { weight: 4, arbitrary: replace(hostileString) },
    { weight: 3, arbitrary: replace(anyJson) },
    { weight: 1, arbitrary: fields.length === 0 ? fc.constant(valid) : fc.constantFrom(...fields).map((f) => omit(valid, f)) },
    { weight: 1, arbitrary: fc.tuple(hostileString, anyJson).map(([k, v]) => ({ ...valid, [k]: v })) },
    // Every field hostile at once: the free-text fields get the attack strings.
    { weight: 2, arbitrary: fc.array(hostileString, { minLength: fields.length, maxLength: fields.length }).map((values) => Object.fromEntries(fields.map((f, i) => [f, values[i]]))) },
  );
}

function omit(doc: Doc, field: string): Doc {
  const { [field]: _dropped, ...rest } = doc;
  return rest;
}

/** Every string in a value, keys included. */
export function stringsIn(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) for (const item of value) stringsIn(item, into);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      into.push(k);
      stringsIn(v, into);
    }
  }
  return into;
}

/** Fragments that only an internal failure would put in an answer. */
const INTERNAL_DETAIL = [
  /\/work\//,
  /node_modules/,
  /\n\s+at /,
  // A stack frame names its location; prose such as "only at creation (POST …)" does not.
  /\bat [\w.<>$]+ \((?:[^()\s]+:\d+:\d+|<anonymous>|native)\)/,
  /\.[cm]?[jt]s:\d+:\d+/,
  /file:\/\//,
  // PostgreSQL and PGlite error texts.
  /syntax error at or near/i,
  /invalid byte sequence/i,
  /invalid input syntax/i,
  /violates .* constraint/i,
  /duplicate key value/i,
  /relation "[^"]*"/i,
  /column "[^"]*"/i,
  /unterminated quoted/i,
  /SQLSTATE|PGlite|error: .*postgres/i,
  /\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b[\s\S]{0,200}\b(FROM|VALUES|SET|WHERE)\b/,
  /TypeError|ReferenceError|RangeError|Maximum call stack/,
];

/**
 * The answer's text with the caller's own strings removed (an answer may echo what was sent,
 * e.g. "Team '); DROP TABLE… was not found"), then checked for internal detail.
 */
export function expectNoInternalDetail(text: string, sent: unknown): void {
  let rest = shortenRuns(text);
  const echoes = stringsIn(sent)
    .filter((s) => s.length > 0)
    // As sent or trimmed (as Id and Text do), as sent or well-formed (as a URL carries it);
    // raw, JSON-escaped, escaped twice (an MCP error's text block), URL-encoded.
    .flatMap((s) => [s, s.trim()])
    .flatMap((s) => [s, wellFormed(s)])
    .flatMap((s) => [s, jsonEscaped(s), jsonEscaped(jsonEscaped(s)), encodePart(s)])
    .map(shortenRuns);
  for (const echo of [...new Set(echoes)].sort((a, b) => b.length - a.length)) rest = rest.split(echo).join('');
  for (const pattern of INTERNAL_DETAIL) expect(rest, `internal detail ${pattern} in ${text.slice(0, 500)}`).not.toMatch(pattern);
}

/**
 * Runs of one character cut to 16, in the answer and the echoes alike: an echo's runs lie within the
 * answer's, so it still matches, and removing a 20,000-character echo from an answer holding other
 * long runs stays linear instead of comparing the whole echo at every position.
 */
const shortenRuns = (text: string) => text.replace(/([^])\1{16,}/g, (_run, unit: string) => unit.repeat(16));

const jsonEscaped = (text: string) => JSON.stringify(text).slice(1, -1);

/** Lone surrogates become U+FFFD, as URLs and HTTP carry them. */
export function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** encodeURIComponent, which would throw on a lone surrogate. */
export function encodePart(text: string): string {
  return encodeURIComponent(wellFormed(text));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface Answer {
  status: number;
  text: string;
}

/** A v4 answer: below 500, the success or error envelope, no internal detail. */
export function expectV4Answer(answer: Answer, sent: unknown): void {
  const body = parseJson(answer.text) as Doc | undefined;
  expect(answer.status, answer.text.slice(0, 500)).toBeLessThan(500);
  expect(body, answer.text.slice(0, 200)).toBeTypeOf('object');
  if (answer.status < 400) {
    expect(body).toMatchObject({ ok: true, meta: { requestId: expect.any(String) } });
    return;
  }
  expect(body).toMatchObject({ ok: false, error: { code: expect.any(String), message: expect.any(String) }, meta: { requestId: expect.any(String) } });
  expectNoInternalDetail(answer.text, sent);
}

/** A v2 answer: below 500 unless the upstream is missing (501), the v2 error shape with its status, no internal detail. */
export function expectV2Answer(answer: Answer, sent: unknown): void {
  expect(answer.status === 501 || answer.status < 500, answer.text.slice(0, 500)).toBe(true);
  const body = parseJson(answer.text) as Doc | undefined;
  expect(body, answer.text.slice(0, 200)).toBeDefined();
  if (answer.status < 400) return;
  expect(body).toMatchObject({ error: { status: answer.status, code: expect.any(String), message: expect.any(String) } });
  expectNoInternalDetail(answer.text, sent);
}

/** A query string carrying the input's fields: strings as they are, other values as JSON. */
export function queryOf(input: Doc): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) params.append(k, typeof item === 'string' ? item : JSON.stringify(item));
    else params.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Fills a Fastify-style path's `:name` segments from the input (URL-encoded), removing them from the rest. */
export function fillPath(path: string, input: Doc): { url: string; rest: Doc } {
  const { path: url, rest } = fillPathTemplate(path, input, (_name, value) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value ?? 'missing');
    // An empty segment would route elsewhere; that is the router's case, not the operation's.
    return encodePart(text === '' ? ' ' : text);
  });
  return { url, rest };
}
