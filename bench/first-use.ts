import { FirstUseRecorder } from '../src/access/first-use.js';
import type { Queryable } from '../src/store/db.js';
import { writeResults } from './lib.js';

/*
 * What the first-use recorder adds to every successful v4 call of an API key: after a key's first call
 * with a capability in this process, a call only looks the pair up (no write, no allocation). Timed in
 * process over many calls; the write itself, once per key and capability, is off the request path.
 */

const CALLS = Number(process.env.BENCH_CALLS ?? 5_000_000);
const ROUNDS = 5;
const KEYS = 1_000;

const writes = { count: 0 };
const db = { query: async () => (writes.count++, []) } as unknown as Queryable;
const recorder = new FirstUseRecorder(db, () => new Date(), () => {});
const keyIds = Array.from({ length: KEYS }, (_, i) => `k${String(i).padStart(8, '0')}`);
for (const keyId of keyIds) {
  recorder.record(keyId, null);
  recorder.record(keyId, 'mcp:employees:read');
}
await recorder.settled();
const writesBefore = writes.count;

/** Median ns per call over the rounds, cycling through the keys as requests of many integrations would. */
function nsPerCall(call: (keyId: string) => void): number {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) call(keyIds[i % KEYS]!);
    rounds.push(Number(process.hrtime.bigint() - start) / CALLS);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

const seen = new Set(keyIds);
const empty = nsPerCall(() => {});
const oneLookup = nsPerCall((keyId) => seen.has(keyId));
const withCapability = nsPerCall((keyId) => recorder.record(keyId, 'mcp:employees:read'));
const withoutCapability = nsPerCall((keyId) => recorder.record(keyId, null));
if (writes.count !== writesBefore) throw new Error(`the hot path wrote ${writes.count - writesBefore} time(s)`);

console.log(
  await writeResults(
    'first-use',
    'npm run bench -- first-use',
    ['call', 'median ns per call', 'writes'],
    [
      ['loop with an empty call (the loop itself)', empty.toFixed(1), 0],
      ['one Set lookup of the key id, for scale', oneLookup.toFixed(1), 0],
      ['record(key, capability), already recorded', withCapability.toFixed(1), 0],
      ['record(key, null) (whoami), already recorded', withoutCapability.toFixed(1), 0],
    ],
    [
      `${CALLS} calls per round over ${KEYS} keys, median of ${ROUNDS} rounds. A key's first success with a capability costs one`,
      'write (a conditional UPDATE and an INSERT … ON CONFLICT DO NOTHING in one statement), off the request path; every',
      'later one in the process costs the lookups above.',
    ],
  ),
);
