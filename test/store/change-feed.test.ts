import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { parseApiKey } from '../../src/access/api-keys.js';
import { createCore, type Core } from '../../src/app/core.js';
import { revokeKey, setUserDisabled } from '../../src/domain/admin.js';
import { buildApp } from '../../src/app/http-app.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { readConfirmedLater, TopicCache, type ChangeTopic, type Freshness } from '../../src/store/change-feed.js';
import { CHANGE_LISTENER_NAME, openDb } from '../../src/store/db.js';
import { sql } from '../../src/store/sql.js';
import { backends, startTestApp, type TestApp, EVENTUALLY } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

/*
 * Cached credentials are dropped by database notifications: in the writing process before its
 * write returns, and in every other process when the notification arrives. While notifications
 * may be missed, nothing is served from cache.
 */

const me = (core: Core, apiKey: string) => core.auth.authenticate({ 'x-api-key': apiKey });

/**
 * Each turn of the feed between live and deaf, as its subscribers see it. A credential change heard
 * meanwhile (one made before the test subscribed can still come in after) also reaches subscribers,
 * but leaves `live` as it was, so it is no turn.
 */
function liveStates(changes: Core['changes']): boolean[] {
  const turns: boolean[] = [];
  let last = changes.live;
  changes.subscribe('credentials', () => {
    if (changes.live !== last) turns.push(changes.live);
    last = changes.live;
  });
  return turns;
}

describe.each(backends())('credential cache and change feed [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses a revoked key on the very next call in the revoking process', async () => {
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    await me(t.core, key);
    await me(t.core, key);
    await revokeKey(t.core.db, parseApiKey(key)!.keyId);
    await expect(me(t.core, key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('sees a disabled user and a narrowed role on the very next call', async () => {
    const key = await keyWith(t, 'employee', ['mcp:employees:read']);
    expect((await me(t.core, key)).capabilities.has('mcp:employees:read')).toBe(true);
    await setUserDisabled(t.core.db, t.demo.emails.employee, true);
    await expect(me(t.core, key)).rejects.toMatchObject({ status: 401, code: 'user_disabled' });
    await setUserDisabled(t.core.db, t.demo.emails.employee, false);
    await me(t.core, key);
    await t.core.db.query(sql`DELETE FROM user_companies WHERE user_id = (SELECT id FROM users WHERE email = ${t.demo.emails.employee})`);
    expect((await me(t.core, key)).companyIds).toEqual([]);
  });

  it('does not cache a key that failed, so a key minted later works at once', async () => {
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    const { keyId } = parseApiKey(key)!;
    const wrongSecret = `svc_sk_${keyId}_${'x'.repeat(43)}`;
    await expect(me(t.core, wrongSecret)).rejects.toMatchObject({ status: 401 });
    expect((await me(t.core, key)).userId).toBeTruthy();
  });
});

describe.each(backends().filter((b) => b === 'postgres'))('change feed across instances [%s]', () => {
  let t: TestApp;
  let other: Core;
  beforeAll(async () => {
    t = await startTestApp('postgres');
    const [row] = await t.core.db.query<{ schema: string }>(sql`SELECT current_schema() AS schema`);
    other = await createCore(t.core.config, { logger: pino({ level: 'silent' }), schema: row!.schema });
  });
  afterAll(async () => {
    await other.close();
    await t.close();
  });

  it('refuses a key revoked by another instance at its very next call, without waiting for the notification', async () => {
    // In one process, nothing has read the other instance's listening socket when the revoke returns:
    // without the round trip on its listener, the cached grant would be served once more.
    for (let i = 0; i < 10; i++) {
      const key = await keyWith(t, 'admin', ['mcp:teams:read']);
      await me(other, key);
      await me(other, key);
      await revokeKey(t.core.db, parseApiKey(key)!.keyId);
      await expect(me(other, key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    }
  });

  it("waits once per request: a later lookup as of the request's arrival needs no second round trip", async () => {
    const asOf = performance.now();
    await other.changes.caughtUp(asOf);
    expect(other.changes.caughtUp(asOf)).toBeUndefined();
    // A moment after the last round trip was sent is not covered: a revocation then must still be heard.
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    await me(other, key);
    await revokeKey(t.core.db, parseApiKey(key)!.keyId);
    const later = other.changes.caughtUp(performance.now());
    expect(later).toBeInstanceOf(Promise);
    await later;
    await expect(me(other, key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it("takes a statement's answer as proof: a hit after one is served at once, and a key revoked before it is refused", async () => {
    // The listeners are stopped, so only the pool's connections can bring the revocation's notification
    // in, and PostgreSQL sends it ahead of the answer to a statement read after the commit.
    const admin = new pg.Client({ connectionString: inject('postgresUrl') });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [CHANGE_LISTENER_NAME]);
      expect(rows.length).toBeGreaterThan(0);
      for (let i = 0; i < 5; i++) {
        const key = await keyWith(t, 'admin', ['mcp:teams:read']);
        await me(other, key);
        await me(other, key);
        // Covers every connection the pool has opened, so the statement below counts wherever it runs.
        await other.changes.caughtUp();
        // Stopped well inside the heartbeat's timeout, so the feed stays live.
        for (const { pid } of rows) process.kill(pid, 'SIGSTOP');
        try {
          const heardBefore = other.changes.generation('credentials');
          await revokeKey(t.core.db, parseApiKey(key)!.keyId);
          const asOf = performance.now();
          await other.db.query(sql`SELECT 1`);
          // Heard by the time the statement answered, and counted as caught up, with no round trip.
          expect(other.changes.generation('credentials')).toBeGreaterThan(heardBefore);
          expect(other.changes.caughtUp(asOf)).toBeUndefined();
          await expect(me(other, key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
        } finally {
          for (const { pid } of rows) process.kill(pid, 'SIGCONT');
        }
        expect(other.changes.live).toBe(true);
      }
    } finally {
      await admin.end();
    }
  });

  it('answers a v2 read from its caches, and answers it again when a change committed before it is heard during it', async () => {
    const otherApp = await buildApp(other);
    const legacy = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'confirmed later', scopes: ['api.employee.get'] });
    const [employee] = await t.core.db.query<{ id: string }>(sql`SELECT id FROM employees WHERE company_id = ${t.demo.companies.acme} LIMIT 1`);
    const read = () => otherApp.inject({ method: 'GET', url: `/v2/employees/${employee!.id}`, headers: { 'x-api-key': legacy.rawKey! } });
    const admin = new pg.Client({ connectionString: inject('postgresUrl') });
    await admin.connect();
    try {
      expect((await read()).statusCode).toBe(200);
      expect((await read()).statusCode).toBe(200);
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [CHANGE_LISTENER_NAME]);
      // With the listeners stopped, the narrowing is heard through the pooled connections only: before the
      // key's lookup, or after it through the read's own statements. Either way the read must not stand.
      // Stopped well inside the heartbeat's timeout. (Which of the two happens is up to the event loop;
      // readConfirmedLater's own tests below take the change heard during the read, and none heard.)
      for (const { pid } of rows) process.kill(pid, 'SIGSTOP');
      let answer;
      try {
        // The key's own row only: its bridge key, which the v4 side checks, stays valid.
        await t.core.db.query(sql`UPDATE legacy_keys SET scopes = ARRAY['api.teams.getAll'] WHERE id = ${legacy.id}`);
        answer = await read();
      } finally {
        for (const { pid } of rows) process.kill(pid, 'SIGCONT');
      }
      expect(answer.statusCode).toBe(403);
      expect(answer.json()).toMatchObject({ error: { code: 'missing_scope' } });
      expect(other.changes.live).toBe(true);
    } finally {
      await admin.end();
      await otherApp.close();
    }
  });

  it("takes no proof from a pooled connection's statements until a round trip covers its LISTEN", async () => {
    const db = await openDb({ databaseUrl: inject('postgresUrl'), dataDir: 'memory://' });
    try {
      const listening = await db.listen('svc_heard_test', () => undefined, () => undefined);
      await db.query(sql`SELECT 1`);
      await listening.caughtUp!();
      const covered = performance.now();
      await db.query(sql`SELECT 1`);
      expect(listening.caughtUp!(covered)).toBeUndefined();
      // Two statements at once: the pool opens a second connection, which began listening after the last round trip.
      const fresh = performance.now();
      await Promise.all([db.query(sql`SELECT pg_sleep(0.05)`), db.query(sql`SELECT pg_sleep(0.05)`)]);
      const waiting = listening.caughtUp!(fresh);
      expect(waiting).toBeInstanceOf(Promise);
      await waiting;
      // The round trip covered it: its statements count again.
      const later = performance.now();
      await db.query(sql`SELECT 1`);
      expect(listening.caughtUp!(later)).toBeUndefined();
      await listening.stop();
    } finally {
      await db.close();
    }
  });

  it('acts once on a change, though each of its listening connections delivers a copy', async () => {
    // Every pooled connection answers a statement, and the listener a round trip: each copy is in by then.
    const letEveryCopyIn = async () => {
      await Promise.all(Array.from({ length: 10 }, () => other.db.query(sql`SELECT pg_sleep(0.02)`)));
      await other.changes.caughtUp();
    };
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    await letEveryCopyIn();
    const seen = other.changes.generation('credentials');
    await revokeKey(t.core.db, parseApiKey(key)!.keyId);
    await letEveryCopyIn();
    expect(other.changes.generation('credentials')).toBe(seen + 1);
  });

  it('drops a key revoked by another instance when the notification arrives', async () => {
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    await me(other, key);
    const seen = other.changes.generation('credentials');
    await revokeKey(t.core.db, parseApiKey(key)!.keyId);
    await vi.waitFor(() => expect(other.changes.generation('credentials')).toBeGreaterThan(seen), EVENTUALLY);
    await expect(me(other, key)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('reports the gap when its listener is lost, drops what it cached, and listens again by itself', async () => {
    const key = await keyWith(t, 'admin', ['mcp:teams:read']);
    await me(other, key);
    const states = liveStates(other.changes);
    const admin = new pg.Client({ connectionString: inject('postgresUrl') });
    await admin.connect();
    try {
      // Every change listener of the database: the others reconnect the same way, losing nothing.
      const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
        CHANGE_LISTENER_NAME,
      ]);
      expect(killed.rowCount).toBeGreaterThan(0);
      await vi.waitFor(() => expect(states).toEqual([false, true]), { timeout: 10_000 });
    } finally {
      await admin.end();
    }
    expect(other.changes.live).toBe(true);
    // Listening again: a revocation elsewhere still reaches it.
    const seen = other.changes.generation('credentials');
    await revokeKey(t.core.db, parseApiKey(key)!.keyId);
    await vi.waitFor(() => expect(other.changes.generation('credentials')).toBeGreaterThan(seen), EVENTUALLY);
    await expect(me(other, key)).rejects.toMatchObject({ status: 401 });
  });
});

describe.each(backends().filter((b) => b === 'postgres'))('change feed heartbeat [%s]', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('postgres');
  });
  afterAll(async () => {
    await t.close();
  });

  it('treats a listener that stopped answering (no end, as behind a dead NAT) as lost, and listens again', async () => {
    const states = liveStates(t.core.changes);
    const admin = new pg.Client({ connectionString: inject('postgresUrl') });
    await admin.connect();
    const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [CHANGE_LISTENER_NAME]);
    expect(rows.length).toBeGreaterThan(0);
    // A stopped backend keeps its socket open and answers nothing: only the heartbeat can notice.
    for (const { pid } of rows) process.kill(pid, 'SIGSTOP');
    try {
      await vi.waitFor(() => expect(states).toEqual([false, true]), { timeout: 20_000, interval: 200 });
    } finally {
      for (const { pid } of rows) process.kill(pid, 'SIGCONT');
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [rows.map((r) => r.pid)]);
      await admin.end();
    }
    expect(t.core.changes.live).toBe(true);
  }, 30_000);
});

describe('TopicCache', () => {
  function feedStub() {
    const subscribers: Array<() => void> = [];
    let generation = 0;
    const feed = {
      live: true,
      /** One process by default: nothing can lag behind. */
      caughtUp: (): Promise<void> | undefined => undefined,
      generation: () => generation,
      subscribe: (_topic: ChangeTopic, onChange: () => void) => void subscribers.push(onChange),
      close: async () => {},
      change() {
        generation += 1;
        for (const onChange of subscribers) onChange();
      },
      /** As the real feed does: a gap, and its end, drop everything. */
      setLive(live: boolean) {
        feed.live = live;
        feed.change();
      },
    };
    return feed;
  }

  /** A cache whose load counts its calls (1, 2, …), with 'k' already cached as 1. */
  async function cachedCount() {
    const feed = feedStub();
    const cache = new TopicCache<number>(feed, 'credentials');
    let loads = 0;
    const load = async () => ++loads;
    await cache.get('k', load);
    return { feed, cache, load, loads: () => loads };
  }

  it('serves a cached value until a change, and nothing from cache while not live', async () => {
    const feed = feedStub();
    const cache = new TopicCache<number>(feed, 'credentials');
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('k', load)).toBe(1);
    expect(await cache.get('k', load)).toBe(1);
    feed.change();
    expect(await cache.get('k', load)).toBe(2);
    feed.setLive(false);
    expect(await cache.get('k', load)).toBe(3);
    expect(await cache.get('k', load)).toBe(4);
    feed.setLive(true);
    // A miss answers a promise of the load; a hit answers the value itself, no promise.
    const missed = cache.get('k', load);
    expect(missed).toBeInstanceOf(Promise);
    expect(await missed).toBe(5);
    expect(cache.get('k', load)).toBe(5);
    feed.setLive(false);
    const notLive = cache.get('k', load);
    expect(notLive).toBeInstanceOf(Promise);
    expect(await notLive).toBe(6);
  });

  it('serves a hit only once the feed has caught up, and loads when a change came meanwhile or it cannot tell', async () => {
    const { feed, cache, load, loads } = await cachedCount();
    let answer: 'change first' | 'nothing new' | 'cannot tell' = 'nothing new';
    feed.caughtUp = () =>
      answer === 'cannot tell'
        ? Promise.reject(new Error('listener lost'))
        : Promise.resolve().then(() => (answer === 'change first' ? feed.change() : undefined));
    expect(await cache.get('k', load)).toBe(1);
    answer = 'change first';
    expect(await cache.get('k', load)).toBe(2);
    answer = 'cannot tell';
    expect(await cache.get('k', load)).toBe(3);
    expect(loads()).toBe(3);
  });

  it('answers a read confirmed later from the cache at once, and keeps its outcome when nothing changed', async () => {
    const { feed, cache, load } = await cachedCount();
    let waits = 0;
    feed.caughtUp = () => {
      waits += 1;
      return Promise.resolve();
    };
    const runs: boolean[] = [];
    const read = async (freshness: Freshness) => {
      runs.push(freshness.confirmedLater);
      // The hit comes at once, with no wait for the feed: the read confirms afterwards, once.
      const value = cache.get('k', load, undefined, freshness);
      expect(value).toBe(1);
      return value;
    };
    expect(await readConfirmedLater(feed, performance.now(), read)).toBe(1);
    expect(runs).toEqual([true]);
    expect(waits).toBe(1);
    // A refusal stands the same way.
    await expect(
      readConfirmedLater(feed, performance.now(), async (freshness) => {
        runs.push(freshness.confirmedLater);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(runs).toEqual([true, true]);
  });

  it('runs a read confirmed later again, waiting per hit, when a change was heard meanwhile or the feed cannot tell', async () => {
    const { feed, cache, load } = await cachedCount();
    const runs: boolean[] = [];
    const read = async (freshness: Freshness) => {
      runs.push(freshness.confirmedLater);
      const value = await cache.get('k', load, undefined, freshness);
      if (value === 1) throw new Error('refused by what was cached');
      return value;
    };
    // The change comes in while the feed catches up: neither the answer nor the refusal of the first run stands.
    let heardFirst = false;
    feed.caughtUp = () => {
      if (heardFirst) return undefined;
      heardFirst = true;
      feed.change();
      return Promise.resolve();
    };
    expect(await readConfirmedLater(feed, performance.now(), read)).toBe(2);
    expect(runs).toEqual([true, false]);
    // The feed cannot tell (listener lost): the read runs again, and its hits wait, so load.
    feed.caughtUp = () => Promise.reject(new Error('listener lost'));
    runs.length = 0;
    expect(await readConfirmedLater(feed, performance.now(), read)).toBe(3);
    expect(runs).toEqual([true, false]);
    // Not live: nothing is served from cache, so the read runs once, as usual.
    feed.setLive(false);
    runs.length = 0;
    expect(await readConfirmedLater(feed, performance.now(), read)).toBe(4);
    expect(runs).toEqual([false]);
  });

  it('does not keep a value loaded across a change, nor one `keep` refuses', async () => {
    const feed = feedStub();
    const cache = new TopicCache<string>(feed, 'credentials');
    expect(
      await cache.get('k', async () => {
        feed.change();
        return 'stale';
      }),
    ).toBe('stale');
    expect(await cache.get('k', async () => 'fresh')).toBe('fresh');
    expect(await cache.get('u', async () => 'unknown', (v) => v !== 'unknown')).toBe('unknown');
    expect(await cache.get('u', async () => 'known')).toBe('known');
  });

  it('holds at most its bound, dropping the oldest first', async () => {
    const cache = new TopicCache<string>(feedStub(), 'credentials', 2);
    await cache.get('a', async () => 'a1');
    await cache.get('b', async () => 'b1');
    await cache.get('c', async () => 'c1');
    expect(await cache.get('a', async () => 'a2')).toBe('a2');
    expect(await cache.get('c', async () => 'c2')).toBe('c1');
  });
});
