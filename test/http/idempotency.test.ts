import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, client, EVENTUALLY, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';

/*
 * Idempotency-Key on REST writes, on both stores: a retry replays the first answer and writes nothing
 * more; the same key for another request is refused; a concurrent retry waits for the first; a key is
 * free again after its day; a refused write keeps nothing.
 */

const HOUR_MS = 3_600_000;

describe.each(backends())('Idempotency-Key on REST writes [%s]', (backend) => {
  let t: ListeningTestApp;
  let clock = new Date('2026-11-28T12:00:00.000Z');
  let n = 0;
  const uniqueName = () => `Idempotent ${backend} ${++n}`;

  beforeAll(async () => {
    t = await startListeningApp(backend, { core: { now: () => clock }, config: { legacyUsageFlushMs: 60_000 } });
  });
  afterAll(() => t.close());

  const post = (key: string | undefined, path: string, body: unknown, apiKey = t.demo.apiKeys.admin!) =>
    fetch(`${t.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
      body: JSON.stringify(body),
    }).then(async (res) => ({ status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as any }));
  const teamsNamed = async (name: string) =>
    (await t.core.db.query<{ id: string }>(sql`SELECT id FROM teams WHERE name = ${name}`)).length;

  it('replays the first answer to a retry with the same key and body, writing once', async () => {
    const name = uniqueName();
    const body = { name, companyId: t.demo.companies.acme };
    const first = await post('retry-1', '/v4/teams', body);
    expect(first.status).toBe(201);
    expect(first.replayed).toBeNull();
    // The same request with its keys in another order is the same request.
    const retry = await post('retry-1', '/v4/teams', { companyId: t.demo.companies.acme, name });
    expect(retry).toMatchObject({ status: 201, replayed: 'true' });
    expect(retry.body).toEqual(first.body);
    expect(await teamsNamed(name)).toBe(1);
  });

  it('keeps the answer sealed: the stored row does not hold it in clear', async () => {
    const name = uniqueName();
    expect((await post('sealed-1', '/v4/teams', { name, companyId: t.demo.companies.acme })).status).toBe(201);
    const [row] = await t.core.db.query<{ sealed_answer: string }>(sql`SELECT sealed_answer FROM idempotency_keys WHERE key = 'sealed-1'`);
    expect(row!.sealed_answer).not.toContain(name);
    expect(Buffer.from(row!.sealed_answer, 'base64').toString('latin1')).not.toContain(name);
  });

  it('refuses the same key for another body or another operation, naming the header', async () => {
    const name = uniqueName();
    expect((await post('reused-1', '/v4/teams', { name, companyId: t.demo.companies.acme })).status).toBe(201);
    const otherBody = await post('reused-1', '/v4/teams', { name: `${name} bis`, companyId: t.demo.companies.acme });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error).toMatchObject({ code: 'idempotency_key_reused', details: [{ field: 'Idempotency-Key', rule: 'same_request' }] });
    const otherOperation = await post('reused-1', '/v4/company/addresses', { alias: name });
    expect(otherOperation.status).toBe(422);
    expect(await teamsNamed(`${name} bis`)).toBe(0);
  });

  it('scopes keys per user: their other credentials replay, another user applies their own write', async () => {
    const name = uniqueName();
    const first = await post('per-user-1', '/v4/teams', { name, companyId: t.demo.companies.acme });
    expect(first.status).toBe(201);
    const secondKey = (await mintKeyForUser(t.core.db, t.demo.emails.admin, 'all', 'second key')).rawKey;
    const sameUser = await post('per-user-1', '/v4/teams', { name, companyId: t.demo.companies.acme }, secondKey);
    expect(sameUser).toMatchObject({ status: 201, replayed: 'true' });
    await createUser(t.core.db, { email: `other-admin-${backend}@acme.example`, displayName: 'Other Admin', role: 'admin', companyIds: [t.demo.companies.acme] });
    const otherAdmin = (await mintKeyForUser(t.core.db, `other-admin-${backend}@acme.example`, 'all', 'other')).rawKey;
    const otherName = uniqueName();
    const theirs = await post('per-user-1', '/v4/teams', { name: otherName, companyId: t.demo.companies.acme }, otherAdmin);
    expect(theirs).toMatchObject({ status: 201, replayed: null });
    expect(await teamsNamed(otherName)).toBe(1);
  });

  it('stores nothing for a refused write: its retry runs again, and the key stays free', async () => {
    const invalid = await post('refused-1', '/v4/teams', { name: '', companyId: t.demo.companies.acme });
    expect(invalid.status).toBe(400);
    const again = await post('refused-1', '/v4/teams', { name: '', companyId: t.demo.companies.acme });
    expect(again).toMatchObject({ status: 400, replayed: null });
    const name = uniqueName();
    expect((await post('refused-1', '/v4/teams', { name, companyId: t.demo.companies.acme })).status).toBe(201);
  });

  it('refuses a replay to a credential that lost the capability since', async () => {
    const name = uniqueName();
    expect((await post('narrowed-1', '/v4/teams', { name, companyId: t.demo.companies.acme })).status).toBe(201);
    const readOnly = (await mintKeyForUser(t.core.db, t.demo.emails.admin, ['mcp:teams:read'], 'read only')).rawKey;
    const replay = await post('narrowed-1', '/v4/teams', { name, companyId: t.demo.companies.acme }, readOnly);
    expect(replay.status).toBe(403);
    expect(replay.body.error.code).toBe('missing_capability');
  });

  it('mints, disables and undoes with a key while v2 calls wait to be counted, without a deadlock', async () => {
    const legacy = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: `keyed ${backend}`, scopes: ['api.employees.getAll'] });
    // A counted v2 call not yet written (the test core flushes far later): the write's reads need it written.
    const v2 = await fetch(`${t.baseUrl}/v2/employees`, { headers: { 'x-api-key': legacy.rawKey! } });
    expect(v2.status).toBe(200);
    const minted = await post('mint-1', `/v4/admin/legacy-keys/${legacy.id}/successor`, {});
    expect(minted.status).toBe(201);
    const replayed = await post('mint-1', `/v4/admin/legacy-keys/${legacy.id}/successor`, {});
    expect(replayed).toMatchObject({ status: 201, replayed: 'true' });
    expect(replayed.body.data.successor.keyId).toBe(minted.body.data.successor.keyId);
    const disabled = await post('disable-1', `/v4/admin/legacy-keys/${legacy.id}/disable`, { force: true, reason: 'keyed test' });
    expect(disabled.status).toBe(200);
    const enabled = await post('enable-1', `/v4/admin/legacy-keys/${legacy.id}/enable`, { reason: 'keyed test' });
    expect(enabled.status).toBe(200);
    // The v2 call was counted once, before the first keyed write read it.
    const [usage] = await t.core.db.query<{ calls: number }>(sql`SELECT sum(calls)::int AS calls FROM legacy_key_usage WHERE legacy_key_id = ${legacy.id}`);
    expect(usage!.calls).toBe(1);
  });

  it('refuses a malformed key with 400 naming the header, and ignores the header on reads', async () => {
    const res = await post('has space', '/v4/teams', { name: uniqueName(), companyId: t.demo.companies.acme });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_idempotency_key', details: [{ field: 'Idempotency-Key' }] });
    const read = await client(t.app, t.demo.apiKeys.admin, { 'idempotency-key': 'has space' }).get('/v4/teams?limit=1');
    expect(read.status).toBe(200);
  });

  it('answers concurrent retries once: one write, every answer the same', async () => {
    const name = uniqueName();
    const answers = await Promise.all(Array.from({ length: 6 }, () => post('concurrent-1', '/v4/teams', { name, companyId: t.demo.companies.acme })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
    expect(new Set(answers.map((a) => a.body.data.id)).size).toBe(1);
    expect(answers.filter((a) => a.replayed === 'true')).toHaveLength(5);
    expect(await teamsNamed(name)).toBe(1);
  });

  it('frees a key after its day: the same key then applies a new request, and expired keys are deleted', async () => {
    const name = uniqueName();
    expect((await post('day-1', '/v4/teams', { name, companyId: t.demo.companies.acme })).status).toBe(201);
    clock = new Date(clock.getTime() + 24 * HOUR_MS + 1000);
    const later = await post('day-1', '/v4/teams', { name: `${name} later`, companyId: t.demo.companies.acme });
    expect(later).toMatchObject({ status: 201, replayed: null });
    expect(await teamsNamed(`${name} later`)).toBe(1);
    // Keys of before the day are swept (at most hourly, off the request path).
    clock = new Date(clock.getTime() + 25 * HOUR_MS);
    expect((await post('day-2', '/v4/teams', { name: uniqueName(), companyId: t.demo.companies.acme })).status).toBe(201);
    await vi.waitFor(async () => {
      const left = await t.core.db.query<{ key: string }>(sql`SELECT key FROM idempotency_keys ORDER BY key`);
      expect(left.map((row) => row.key)).toEqual(['day-2']);
    }, EVENTUALLY);
  });
});

describe.each(backends().filter((b) => b === 'postgres'))('Idempotency-Key while another request holds it [%s]', (backend) => {
  let t: ListeningTestApp;
  beforeAll(async () => {
    t = await startListeningApp(backend);
  });
  afterAll(() => t.close());

  it('waits for the request holding the key, then replays its answer', async () => {
    const body = JSON.stringify({ name: 'Held key team', companyId: t.demo.companies.acme });
    const send = () =>
      fetch(`${t.baseUrl}/v4/teams`, {
        method: 'POST',
        headers: { 'x-api-key': t.demo.apiKeys.admin!, 'content-type': 'application/json', 'idempotency-key': 'held-1' },
        body,
      });
    const first = await send();
    expect(first.status).toBe(201);
    // The test holds the key's row as an unfinished first request would; the retry must wait on it.
    const holder = new pg.Client({ connectionString: t.core.config.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM idempotency_keys WHERE key = 'held-1' FOR UPDATE`);
      const retry = send();
      await vi.waitFor(async () => {
        const { rows } = await holder.query(`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        expect(rows[0].waiting).toBe(1);
      }, EVENTUALLY);
      await holder.query('COMMIT');
      const answer = await retry;
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBe('true');
      expect(await answer.json()).toEqual(await first.json());
    } finally {
      await holder.end();
    }
  });

  it('waits for a first request that has not committed, and applies the write itself if that one rolls back', async () => {
    const [{ userId }] = (await t.core.db.query<{ userId: string }>(sql`SELECT id AS "userId" FROM users WHERE email = ${t.demo.emails.admin}`)) as [{ userId: string }];
    const holder = new pg.Client({ connectionString: t.core.config.databaseUrl });
    await holder.connect();
    try {
      // An unfinished first request with this key, as another instance would hold it.
      await holder.query('BEGIN');
      await holder.query(`INSERT INTO idempotency_keys (user_id, key, fingerprint, created_at, expires_at) VALUES ($1, 'uncommitted-1', 'x', now(), now() + interval '1 day')`, [userId]);
      const retry = fetch(`${t.baseUrl}/v4/teams`, {
        method: 'POST',
        headers: { 'x-api-key': t.demo.apiKeys.admin!, 'content-type': 'application/json', 'idempotency-key': 'uncommitted-1' },
        body: JSON.stringify({ name: 'Rolled back first team', companyId: t.demo.companies.acme }),
      });
      await vi.waitFor(async () => {
        const { rows } = await holder.query(`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        expect(rows[0].waiting).toBe(1);
      }, EVENTUALLY);
      await holder.query('ROLLBACK');
      const answer = await retry;
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBeNull();
    } finally {
      await holder.end();
    }
  });
});
