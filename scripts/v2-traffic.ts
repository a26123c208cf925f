/*
 * Live v2 traffic against a running server, for the migration dashboard (/app/migration):
 * the demo legacy keys call their usual mix of v2 endpoints (src/migration/demo-traffic.ts),
 * including one without a v4 successor, for a while at a steady rate.
 *
 *   node --import tsx scripts/v2-traffic.ts --url http://127.0.0.1:3001 --seconds 10
 *
 * Options: --url (default http://127.0.0.1:3001), --seconds (10), --rate calls per second (20),
 * --keys-file (.data/demo-keys.json, written by `svc-server seed --demo` / `npm start`), --json.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEMO_TRAFFIC, type DemoCall } from '../src/migration/demo-traffic.js';

type KeyName = keyof typeof DEMO_TRAFFIC;

/** The full integration calls three times as often as the address sync. */
const KEY_WEIGHTS: Record<KeyName, number> = { full: 3, addressOnly: 1 };
const V2_PREFIX = '/v2';

const { values: options } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:3001' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '20' },
    'keys-file': { type: 'string', default: '.data/demo-keys.json' },
    json: { type: 'boolean', default: false },
  },
});

function positive(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive number, got ${value}`);
  return parsed;
}

function readKeys(file: string): Record<KeyName, string> {
  let document: { legacyKeys?: Partial<Record<KeyName, string>> };
  try {
    document = JSON.parse(readFileSync(file, 'utf8')) as typeof document;
  } catch (error) {
    throw new Error(`Cannot read the demo keys from ${file} (${(error as Error).message}); start the server with npm start or seed --demo first, or pass --keys-file`);
  }
  const { full, addressOnly } = document.legacyKeys ?? {};
  if (!full || !addressOnly) throw new Error(`${file} holds no legacyKeys.full and legacyKeys.addressOnly`);
  return { full, addressOnly };
}

function pick<T>(items: readonly T[], weightOf: (item: T) => number): T {
  let roll = Math.random() * items.reduce((sum, item) => sum + weightOf(item), 0);
  for (const item of items) {
    roll -= weightOf(item);
    if (roll < 0) return item;
  }
  return items.at(-1)!;
}

const baseUrl = options.url.replace(/\/+$/, '');
const seconds = positive('seconds', options.seconds);
const rate = positive('rate', options.rate);
const keys = readKeys(options['keys-file']);

/** Calls answered, per key and per "route status": every one reached the gateway and is counted there. */
const calls: Record<KeyName, number> = { full: 0, addressOnly: 0 };
const outcomes = new Map<string, number>();

async function call(key: KeyName, method: string, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${baseUrl}${V2_PREFIX}${path}`, { method, headers: { 'x-api-key': keys[key] } });
  const body = await response.text();
  calls[key] += 1;
  const outcome = `${method} ${path.replace(/emp_[^/]+/, ':id')} ${response.status}`;
  outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  return { status: response.status, body };
}

// The employee ids the :id routes ask for, read as the integration itself would.
const listing = await call('full', 'GET', '/employees');
if (listing.status !== 200) throw new Error(`GET ${V2_PREFIX}/employees answered ${listing.status}: is ${baseUrl} the demo server?`);
const employees = (JSON.parse(listing.body) as Array<{ id: string }>).map((employee) => employee.id);
if (employees.length === 0) throw new Error('the demo company has no employees to call the :id routes with');

function request(): Promise<unknown> {
  const key = pick(Object.keys(KEY_WEIGHTS) as KeyName[], (name) => KEY_WEIGHTS[name]);
  const { route } = pick<DemoCall>(DEMO_TRAFFIC[key], (c) => c.weight);
  const [method = 'GET', template = '/'] = route.split(' ');
  const path = template.replace(':id', employees[Math.floor(Math.random() * employees.length)]!);
  // A refused connection ends the run below; an HTTP error status is traffic like any other.
  return call(key, method, path);
}

const started = Date.now();
const inFlight = new Set<Promise<unknown>>();
for (let sent = 0; Date.now() - started < seconds * 1000; sent++) {
  const due = started + (sent * 1000) / rate;
  if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
  const pending = request().finally(() => inFlight.delete(pending));
  inFlight.add(pending);
}
await Promise.all(inFlight);

const elapsed = (Date.now() - started) / 1000;
const summary = { url: baseUrl, seconds: Number(elapsed.toFixed(1)), calls, outcomes: Object.fromEntries([...outcomes].sort()) };
if (options.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  process.stdout.write(
    [
      `${calls.full + calls.addressOnly} v2 calls to ${baseUrl} in ${summary.seconds} s (full ${calls.full}, address sync ${calls.addressOnly}):`,
      ...Object.entries(summary.outcomes).map(([outcome, n]) => `  ${outcome.padEnd(48)} ${n}`),
      `See ${baseUrl}/app/migration (signed in as an admin).`,
    ].join('\n') + '\n',
  );
}
