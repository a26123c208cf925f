import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSharedState, type SharedState } from '../../src/shared-state/index.js';
import { dropKeys, keysUnder, redisUrl, sharedStateKinds, uniquePrefix } from './redis-support.js';

/*
 * One body for both stores: whatever a caller observes of the in-process store, it observes of Redis,
 * and Redis additionally shares it between instances.
 */

const silent = pino({ level: 'silent' });
const prefix = uniquePrefix();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let bucketCounter = 0;
const freshBucket = () => `bucket-${++bucketCounter}`;

const open = (kind: 'memory' | 'redis') =>
  openSharedState({ redisUrl: kind === 'redis' ? redisUrl() : undefined, redisKeyPrefix: prefix }, silent, new Registry());

afterAll(async () => {
  if (redisUrl()) await dropKeys(redisUrl(), prefix);
});

describe.each(sharedStateKinds())('shared state: %s', (kind) => {
  let state: SharedState;

  beforeAll(async () => {
    state = await open(kind);
  });
  afterAll(() => state.close());

  it('is up and answers ping', async () => {
    expect(state.kind).toBe(kind);
    expect(state.status).toBe('up');
    await expect(state.ping()).resolves.toBeUndefined();
  });

  it('allows `limit` hits in a window, then refuses with the time left', async () => {
    const bucket = freshBucket();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await state.rateLimit(bucket, 3, 60));
    expect(results.map((r) => [r.allowed, r.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(results.slice(0, 3).every((r) => r.retryAfterSeconds === 0)).toBe(true);
    expect(results[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(results[3]!.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it('counts concurrent hits exactly (atomic increments)', async () => {
    const bucket = freshBucket();
    const results = await Promise.all(Array.from({ length: 40 }, () => state.rateLimit(bucket, 15, 60)));
    expect(results.filter((r) => r.allowed)).toHaveLength(15);
  });

  it('keeps buckets apart and opens a new window once the old one ends', async () => {
    const [a, b] = [freshBucket(), freshBucket()];
    expect((await state.rateLimit(a, 1, 1)).allowed).toBe(true);
    expect((await state.rateLimit(a, 1, 1)).allowed).toBe(false);
    expect((await state.rateLimit(b, 1, 1)).allowed).toBe(true);
    await sleep(1100);
    expect((await state.rateLimit(a, 1, 1)).allowed).toBe(true);
  });

  it('stores values with a TTL: get, get-and-touch, delete, expiry', async () => {
    await state.set('session-1', '{"user":"u1"}', 60);
    expect(await state.get('session-1')).toBe('{"user":"u1"}');
    expect(await state.get('never-set')).toBeUndefined();
    expect(await state.getAndTouch('never-set', 60)).toBeUndefined();
    expect(await state.get('never-set')).toBeUndefined();

    await state.set('short', 'v', 1);
    expect(await state.getAndTouch('short', 60)).toBe('v');
    await state.set('shorter', 'v', 1);
    await sleep(1100);
    expect(await state.get('short')).toBe('v');
    expect(await state.get('shorter')).toBeUndefined();
    expect(await state.getAndTouch('shorter', 60)).toBeUndefined();
    expect(await state.get('shorter')).toBeUndefined();

    await state.delete('session-1');
    expect(await state.get('session-1')).toBeUndefined();
  });

  it('lets exactly one of many concurrent claims of a key win, until it expires', async () => {
    const claims = await Promise.all(Array.from({ length: 20 }, () => state.claim('approval-nonce', 1)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await state.claim('approval-nonce', 1)).toBe(false);
    await sleep(1100);
    expect(await state.claim('approval-nonce', 1)).toBe(true);
  });
});

describe.skipIf(!redisUrl())('shared state: two Redis clients (two instances)', () => {
  let a: SharedState;
  let b: SharedState;

  beforeAll(async () => {
    [a, b] = await Promise.all([open('redis'), open('redis')]);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('share one rate limit and one session store, under the configured prefix', async () => {
    const bucket = freshBucket();
    expect((await a.rateLimit(bucket, 2, 60)).allowed).toBe(true);
    expect((await b.rateLimit(bucket, 2, 60)).allowed).toBe(true);
    expect((await a.rateLimit(bucket, 2, 60)).allowed).toBe(false);

    await a.set('mcp-session', 'state', 60);
    expect(await b.get('mcp-session')).toBe('state');
    expect(await a.claim('used-once', 60)).toBe(true);
    expect(await b.claim('used-once', 60)).toBe(false);
    expect(await keysUnder(redisUrl(), prefix)).toEqual(expect.arrayContaining([`${prefix}rl:${bucket}`, `${prefix}kv:mcp-session`]));
  });
});
