import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { baseApp } from '../../src/app/base-app.js';
import { SIGN_IN_LIMITS } from '../../src/pages/account-pages.js';
import { SharedStateUnavailable } from '../../src/shared-state/index.js';
import { startListeningApp, startTestApp, type ListeningTestApp, type TestApp } from '../helpers/harness.js';
import { initializeBody, jsonOf, rawPost } from '../mcp/support/mcp.js';
import { authorizationRequest, authorizeInBrowser, discoverAndRegister, exchangeCode, FormBrowser } from '../oauth/support.js';
import { freePort, OwnRedis, redisUrl, uniquePrefix, waitFor } from './redis-support.js';

/*
 * Redis dies under a running core and comes back: rate limits fall back to the process (never to no
 * limit), session reads fail fast with a typed error, metrics, logs and /readyz say so (degraded, not
 * drained: every instance shares the Redis), each surface serves or refuses as documented, and the core
 * recovers by itself. The Redis here is the test's own, on a free port: the machine's is left alone.
 */

// Far above the command timeout (1 s): a hung call would blow through it, a failing one returns at once.
const NO_HANG_MS = 3000;

async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} hung for more than ${NO_HANG_MS} ms`)), NO_HANG_MS);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

type LogLine = { msg?: string; redis?: string; reason?: string };

/** /readyz's status: ready, degraded (Redis down, still serving) or not_ready. */
const readiness = async (app: FastifyInstance) => (await within(app.inject({ url: '/readyz' }), '/readyz')).json().status as string;

/** A core on `redis` whose log lines (info and above) are kept, parsed, in `lines`. */
async function coreOn(redis: OwnRedis): Promise<{ t: TestApp; lines: LogLine[] }> {
  const lines: LogLine[] = [];
  const logs = new PassThrough();
  logs.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
  });
  const t = await startTestApp('pglite', {
    seed: false,
    config: { redisUrl: redis.url, redisKeyPrefix: uniquePrefix() },
    core: { logger: pino({ level: 'info' }, logs) },
  });
  return { t, lines };
}

describe.skipIf(!redisUrl())('Redis stopped mid-test', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let logLines: LogLine[];

  const redisUp = async () => {
    const text = (await t.app.inject({ url: '/metrics' })).body;
    return /^svc_redis_up (\d)$/m.exec(text)?.[1];
  };

  beforeAll(async () => {
    redis = new OwnRedis(await freePort());
    await redis.start();
    ({ t, lines: logLines } = await coreOn(redis));
  });
  afterAll(async () => {
    await t?.close();
    await redis?.kill();
  });

  it('serves from Redis, falls back while it is down, and recovers without a restart', async () => {
    const shared = t.core.shared;
    // Up: ready, gauge 1, sessions stored.
    expect(shared.status).toBe('up');
    expect(await redisUp()).toBe('1');
    const ready = await t.app.inject({ url: '/readyz' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { ok: true, status: 'ready', checks: { database: 'up', redis: 'up' } }]);
    await shared.set('session', 'kept', 300);
    expect((await shared.rateLimit('login', 2, 60)).allowed).toBe(true);

    await redis.kill();

    // Rate limits: counted in this process, still limited.
    const fallback = [];
    for (let i = 0; i < 3; i++) fallback.push(await within(shared.rateLimit('login-during-outage', 2, 60), 'rateLimit'));
    expect(fallback.map((r) => r.allowed)).toEqual([true, true, false]);
    expect(fallback[2]!.retryAfterSeconds).toBeGreaterThan(0);

    // Sessions: a typed error, fast.
    await expect(within(shared.get('session'), 'get')).rejects.toBeInstanceOf(SharedStateUnavailable);
    await expect(within(shared.set('other', 'v', 60), 'set')).rejects.toBeInstanceOf(SharedStateUnavailable);
    await expect(within(shared.getAndTouch('session', 60), 'getAndTouch')).rejects.toBeInstanceOf(SharedStateUnavailable);

    // Which an HTTP route answers as 503 with Retry-After.
    const probe = baseApp(t.core);
    probe.get('/probe/session', async () => ({ ok: true, data: await t.core.shared.get('session') }));
    const refused = await probe.inject({ url: '/probe/session' });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json().error.code).toBe('shared_state_unavailable');
    await probe.close();

    // Metrics, readiness and logs say so; readiness stays 200, degraded, with the reason.
    expect(shared.status).toBe('down');
    expect(await redisUp()).toBe('0');
    const degraded = await within(t.app.inject({ url: '/readyz' }), '/readyz');
    expect(degraded.statusCode).toBe(200);
    expect(degraded.json()).toEqual({
      ok: true,
      status: 'degraded',
      checks: { database: 'up', redis: 'down' },
      degraded: [{ check: 'redis', reason: expect.stringMatching(/^Redis down: MCP sessions answer 503 shared_state_unavailable, rate limits count per process/) }],
    });
    expect(logLines.some((line) => line.redis === 'down' && /Redis shared state down/.test(line.msg ?? ''))).toBe(true);
    // The process is still serving what does not depend on Redis.
    expect((await t.app.inject({ url: '/healthz' })).statusCode).toBe(200);

    await redis.start();
    await waitFor(() => shared.status === 'up', 'the core to reconnect to Redis');

    expect(await redisUp()).toBe('1');
    expect(await readiness(t.app)).toBe('ready');
    // An empty Redis came back (no persistence): the session is gone, new ones are stored again.
    expect(await shared.get('session')).toBeUndefined();
    await shared.set('session', 'again', 300);
    expect(await shared.get('session')).toBe('again');
    expect((await shared.rateLimit('login-after', 1, 60)).allowed).toBe(true);
    expect((await shared.rateLimit('login-after', 1, 60)).allowed).toBe(false);
    expect(logLines.some((line) => line.redis === 'up' && /Redis shared state up/.test(line.msg ?? ''))).toBe(true);
  });
});

describe.skipIf(!redisUrl())('each surface while Redis is down', () => {
  let redis: OwnRedis;
  let s: ListeningTestApp;

  beforeAll(async () => {
    redis = new OwnRedis(await freePort());
    await redis.start();
    s = await startListeningApp('pglite', { config: { redisUrl: redis.url, redisKeyPrefix: uniquePrefix() } });
  });
  afterAll(async () => {
    await s?.close();
    await redis?.kill();
  });

  it('stays in the balancer degraded: REST, v2, OAuth and the pages serve, MCP sessions refuse with Retry-After, limits hold per process', async () => {
    const adminKey = s.demo.apiKeys.admin;
    const { rawKey: legacyKey } = await createLegacyKey(s.core, s.core.mappings, {
      companyId: s.demo.companies.acme,
      name: 'redis outage',
      scopes: ['api.employees.getAll'],
    });
    await redis.kill();
    await waitFor(() => s.core.shared.status === 'down', 'the core to see Redis gone');

    const ready = await fetch(`${s.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await jsonOf(ready)).toMatchObject({ status: 'degraded', checks: { database: 'up', redis: 'down' }, degraded: [{ check: 'redis' }] });

    // REST and v2 need no Redis.
    expect((await fetch(`${s.baseUrl}/v4/me`, { headers: { 'x-api-key': adminKey } })).status).toBe(200);
    expect((await fetch(`${s.baseUrl}/v2/employees`, { headers: { 'x-api-key': legacyKey! } })).status).toBe(200);

    // OAuth through the pages: register, sign in, consent, exchange the code (its rate limits count in the process).
    const registered = await discoverAndRegister(s.baseUrl);
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:employees:read');
    const { callback } = await authorizeInBrowser(new FormBrowser(), request.url, registered.redirectUri);
    const tokens = await exchangeCode(registered, callback, request, s.mcpUrl);
    expect(tokens.access_token).toBeTruthy();

    // MCP sessions live in Redis: refused cleanly, whichever the credential, with when to retry.
    const credentials: Array<Record<string, string>> = [{ 'x-api-key': adminKey }, { authorization: `Bearer ${tokens.access_token}` }];
    for (const credential of credentials) {
      const initialize = await rawPost(s.mcpUrl, initializeBody(), credential);
      expect(initialize.status).toBe(503);
      expect(initialize.headers.get('retry-after')).toBe('5');
      expect((await jsonOf(initialize)).error).toMatchObject({ code: -32000, data: { code: 'shared_state_unavailable' } });
    }

    // The sign-in limit still holds, counted in this process: never unlimited.
    const email = `guess-${randomBytes(4).toString('hex')}@example.com`;
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) expect((await new FormBrowser().signIn(s.baseUrl, email, 'wrong')).status).toBe(401);
    const refused = await new FormBrowser().signIn(s.baseUrl, email, 'wrong');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    await redis.start();
    await waitFor(async () => (await readiness(s.app)) === 'ready', 'the core to be ready again');
    expect((await rawPost(s.mcpUrl, initializeBody(), { authorization: `Bearer ${tokens.access_token}` })).status).toBe(200);
  });
});

describe.skipIf(!redisUrl())('Redis down when the core starts', () => {
  it('starts anyway in degraded mode, and picks Redis up when it appears', async () => {
    const redis = new OwnRedis(await freePort());
    const t = await startTestApp('pglite', { seed: false, config: { redisUrl: redis.url, redisKeyPrefix: uniquePrefix() } });
    try {
      expect(t.core.shared.status).toBe('down');
      expect(await readiness(t.app)).toBe('degraded');
      expect((await t.core.shared.rateLimit('b', 1, 60)).allowed).toBe(true);
      expect((await t.core.shared.rateLimit('b', 1, 60)).allowed).toBe(false);

      await redis.start();
      await waitFor(() => t.core.shared.status === 'up', 'the core to connect to Redis');
      expect(await readiness(t.app)).toBe('ready');
    } finally {
      await t.close();
      await redis.kill();
    }
  });
});

describe.skipIf(!redisUrl())('A Redis older than 6.2', () => {
  const LACKING = 'Redis lacks GETEX: the shared state needs Redis 6.2 or newer';

  it('is reported down with the reason, not failed call by call, taken up once upgraded in place, and found again after a failover', async () => {
    // A real Redis without GETEX, as Redis before 6.2 is: the command removed from its table.
    const redis = new OwnRedis(await freePort(), ['--rename-command', 'GETEX', '']);
    await redis.start();
    const { t, lines: logLines } = await coreOn(redis);
    try {
      const shared = t.core.shared;
      expect(shared.status).toBe('down');
      const down = logLines.find((line) => line.redis === 'down');
      expect(down?.reason).toBe(LACKING);
      expect(await readiness(t.app)).toBe('degraded');
      // Sessions refuse with the reason; rate limits count in the process.
      await expect(within(shared.getAndTouch('session', 60), 'getAndTouch')).rejects.toThrow(/Redis lacks GETEX/);
      await expect(within(shared.set('session', 'v', 60), 'set')).rejects.toBeInstanceOf(SharedStateUnavailable);
      expect((await shared.rateLimit('b', 1, 60)).allowed).toBe(true);
      expect((await shared.rateLimit('b', 1, 60)).allowed).toBe(false);

      await redis.kill();
      await redis.start([]);
      await waitFor(() => shared.status === 'up', 'the core to take up the upgraded Redis');
      expect(await readiness(t.app)).toBe('ready');
      await shared.set('session', 'kept', 60);
      expect(await shared.getAndTouch('session', 60)).toBe('kept');

      // Back on a server without GETEX (a failover to an old replica): found on the new connection and said so,
      // though the connection's close had already reported the state down.
      const linesBefore = logLines.length;
      await redis.kill();
      await redis.start(['--rename-command', 'GETEX', '']);
      await waitFor(() => logLines.slice(linesBefore).some((line) => line.reason === LACKING), 'the reason logged again');
      expect(shared.status).toBe('down');
      await expect(within(shared.getAndTouch('session', 60), 'getAndTouch')).rejects.toThrow(/Redis lacks GETEX/);
    } finally {
      await t.close();
      await redis.kill();
    }
  });

  it('is used, with a warning, when it will not say which commands it has', async () => {
    // A real Redis whose ACL refuses COMMAND (as some managed services do): the check cannot tell, GETEX still works.
    const redis = new OwnRedis(await freePort(), ['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', '-command']);
    await redis.start();
    const { t, lines } = await coreOn(redis);
    try {
      expect(t.core.shared.status).toBe('up');
      expect(lines.some((line) => /did not say which commands it has/.test(line.msg ?? ''))).toBe(true);
      await t.core.shared.set('session', 'kept', 60);
      expect(await t.core.shared.getAndTouch('session', 60)).toBe('kept');
    } finally {
      await t.close();
      await redis.kill();
    }
  });
});
