import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { SIGN_IN_LIMITS } from '../../src/pages/account-pages.js';
import { connect, jsonOf, rawPost, type Connected } from '../mcp/support/mcp.js';
import { csrfOf, FormBrowser } from '../oauth/support.js';
import { backends, TEST_SECRET_KEY, adminQuery } from '../helpers/harness.js';
import { runCommandSync, ServerProcess } from '../helpers/server-process.js';
import { freePort, OwnRedis, redisUrl, uniquePrefix, waitFor } from '../shared-state/redis-support.js';

/*
 * Issue 8's acceptance: two instances of the real server, A and B, each its own `svc-server serve`
 * process, on one PostgreSQL schema and one Redis (the test's own, so that it can be stopped).
 * Nothing here reaches into either process: every step is an HTTP request, as through a load balancer.
 * PGlite cannot be shared between processes, so PostgreSQL only.
 */

const TOOLS_CALL = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

describe.each(backends().filter((b) => b === 'postgres' && redisUrl()))('two instances on PostgreSQL and Redis [%s]', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  let redis: OwnRedis;
  let a: ServerProcess;
  let b: ServerProcess;
  let urlA: string;
  let urlB: string;
  let demoKey: string;
  // Signed in on A's pages as the demo admin: keys are minted and revoked there.
  const browser = new FormBrowser();
  const sessions: Connected[] = [];

  beforeAll(async () => {
    await adminQuery(`CREATE SCHEMA ${schema}`);
    redis = new OwnRedis(await freePort());
    await redis.start();
    const databaseUrl = new URL(inject('postgresUrl'));
    databaseUrl.searchParams.set('options', `-c search_path=${schema}`);
    const env = {
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl.toString(),
      SVC_SECRET_KEY: TEST_SECRET_KEY,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: uniquePrefix(),
    };
    const seeded = runCommandSync(['seed', '--demo', '--json'], env);
    expect(seeded.status, seeded.stderr).toBe(0);
    demoKey = (JSON.parse(seeded.stdout) as { apiKeys: { admin: string } }).apiKeys.admin;
    // One after the other, so that afterAll stops A even when B fails to start.
    a = await ServerProcess.start([], env);
    b = await ServerProcess.start([], env);
    [urlA, urlB] = [a.summary.url, b.summary.url];
    expect((await browser.signIn(urlA, 'admin@demo.example')).status).toBe(303);
  }, 120_000);

  afterAll(async () => {
    for (const session of sessions) await session.close().catch(() => undefined);
    for (const instance of [a, b]) await instance?.stop();
    await redis?.kill();
    await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
  });

  const me = (url: string, key: string) => fetch(`${url}/v4/me`, { headers: { 'x-api-key': key } });

  /** Mints a key on A's API-keys page; returns it and its id (from its revoke form). */
  async function mintOnA(name: string): Promise<{ key: string; id: string }> {
    const page = await (await browser.fetch(`${urlA}/app/developers/api-keys`)).text();
    const minted = await browser.fetch(`${urlA}/app/developers/api-keys`, {
      form: { _csrf: csrfOf(page), name, capabilities: ['mcp:employees:read', 'mcp:company:read'] },
    });
    expect(minted.status).toBe(201);
    const html = await minted.text();
    const key = /data-testid="raw-key">([^<]+)</.exec(html)?.[1];
    const id = new RegExp(`${name}<br>[\\s\\S]*?action="/app/developers/api-keys/([^/"]+)/revoke"`).exec(html)?.[1];
    if (!key || !id) throw new Error(`no key or revoke form for ${name} in the page`);
    return { key, id };
  }

  /** Revokes on A's page; the answer comes after A's commit, which is when PostgreSQL notifies B. */
  async function revokeOnA(id: string): Promise<void> {
    const page = await (await browser.fetch(`${urlA}/app/developers/api-keys`)).text();
    const revoked = await browser.fetch(`${urlA}/app/developers/api-keys/${id}/revoke`, { form: { _csrf: csrfOf(page) } });
    expect(revoked.status).toBe(303);
  }

  /** An MCP session initialized on A by the SDK client. */
  async function sessionOnA(key: string): Promise<{ id: string; version: string }> {
    const session = await connect(`${urlA}/mcp`, key);
    sessions.push(session);
    return { id: session.transport.sessionId!, version: session.transport.protocolVersion! };
  }

  const toolCallOnB = (key: string, session: { id: string; version: string }) =>
    rawPost(`${urlB}/mcp`, TOOLS_CALL, { 'x-api-key': key, 'mcp-session-id': session.id, 'mcp-protocol-version': session.version });

  it('serves a key minted on A on B, and refuses it on B at the very next request once revoked on A', async () => {
    const { key, id } = await mintOnA('scale-one');
    // Used on B first, so that B holds it in its credential cache: the revocation must reach that cache.
    expect((await me(urlB, key)).status).toBe(200);
    expect((await me(urlB, key)).status).toBe(200);

    await revokeOnA(id);
    // No wait: before serving its cached grant, B makes a round trip on its listener, which PostgreSQL
    // answers only after the notification of A's commit.
    const refused = await me(urlB, key);
    expect(refused.status).toBe(401);
    expect((await jsonOf(refused)).error.code).toBe('invalid_api_key');
  });

  it('continues on B an MCP session initialized on A, and ends it for A when B is told to', async () => {
    const session = await sessionOnA(demoKey);
    const answer = await toolCallOnB(demoKey, session);
    expect(answer.status).toBe(200);
    const body = await jsonOf(answer);
    expect(body.id).toBe(7);
    expect(body.result.structuredContent.user.email).toBe('admin@demo.example');

    const ended = await fetch(`${urlB}/mcp`, { method: 'DELETE', headers: { 'x-api-key': demoKey, 'mcp-session-id': session.id } });
    expect(ended.status).toBe(204);
    const gone = await rawPost(`${urlA}/mcp`, TOOLS_CALL, { 'x-api-key': demoKey, 'mcp-session-id': session.id });
    expect(gone.status).toBe(404);
  });

  it('shares the sign-in limit: the tries of one email alternate between A and B, then both refuse', async () => {
    const email = `guess-${randomBytes(4).toString('hex')}@example.com`;
    // Half on each: counted per process, neither would be near the limit.
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) {
      expect((await new FormBrowser().signIn(i % 2 === 0 ? urlA : urlB, email, 'wrong')).status).toBe(401);
    }
    for (const url of [urlA, urlB]) {
      const refused = await new FormBrowser().signIn(url, email, 'wrong');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });

  it('with Redis stopped: stays ready but degraded, still refuses revoked keys, serves REST; resumes when Redis returns', async () => {
    const { key, id } = await mintOnA('scale-two');
    expect((await me(urlB, key)).status).toBe(200);

    await redis.kill();

    // Both share the Redis: draining on it would empty the balancer, so both stay in, degraded.
    for (const url of [urlA, urlB]) {
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await jsonOf(ready)).toMatchObject({ status: 'degraded', checks: { database: 'up', redis: 'down' }, degraded: [{ check: 'redis' }] });
    }
    // Revocation travels through PostgreSQL, not Redis.
    await revokeOnA(id);
    expect((await me(urlB, key)).status).toBe(401);
    // What needs no Redis keeps working.
    const employees = await fetch(`${urlB}/v4/employees`, { headers: { 'x-api-key': demoKey } });
    expect(employees.status).toBe(200);
    // MCP sessions live in Redis: refused for now, with a hint when to retry.
    const initialize = await rawPost(`${urlB}/mcp`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
    }, { 'x-api-key': demoKey });
    expect(initialize.status).toBe(503);
    expect(initialize.headers.get('retry-after')).toBe('5');
    expect((await jsonOf(initialize)).error.data).toEqual({ code: 'shared_state_unavailable' });

    await redis.start();
    // Each instance reconnects by itself (its back-off tops at 2 s): no restart.
    for (const url of [urlA, urlB]) {
      await waitFor(async () => (await jsonOf(await fetch(`${url}/readyz`))).status === 'ready', `${url} to be ready again`);
    }
    const session = await sessionOnA(demoKey);
    expect((await toolCallOnB(demoKey, session)).status).toBe(200);
    expect((await me(urlB, key)).status).toBe(401);
  });
});
