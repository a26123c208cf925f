import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseApp } from '../../src/app/base-app.js';
import { rateLimited } from '../../src/http/rate-limit.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { dropKeys, redisUrl, sharedStateKinds, uniquePrefix } from '../shared-state/redis-support.js';

/*
 * The rate-limit preHandler on a test-only sign-in route, on two instances. In-process each instance
 * counts alone; with Redis the two share one count, as the token and sign-in endpoints will.
 */

const LIMIT = 3;

function signInApp(t: TestApp): FastifyInstance {
  const app = baseApp(t.core);
  app.post<{ Body: { username?: string } }>(
    '/test/sign-in',
    {
      preHandler: rateLimited(t.core, {
        name: 'test_sign_in',
        limit: LIMIT,
        windowSeconds: 60,
        key: (request) => ({ ip: request.ip, credential: (request.body as { username?: string }).username }),
      }),
    },
    async () => ({ ok: true }),
  );
  return app;
}

describe.each(sharedStateKinds())('rateLimited (%s)', (kind) => {
  const prefix = uniquePrefix();
  const config = kind === 'redis' ? { redisUrl: redisUrl(), redisKeyPrefix: prefix } : {};
  let instances: TestApp[];
  let apps: FastifyInstance[];

  beforeAll(async () => {
    instances = [await startTestApp('pglite', { seed: false, config }), await startTestApp('pglite', { seed: false, config })];
    apps = instances.map(signInApp);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const t of instances) await t.close();
    if (kind === 'redis') await dropKeys(redisUrl(), prefix);
  });

  const signIn = (app: FastifyInstance, ip: string, username: string) =>
    app.inject({ method: 'POST', url: '/test/sign-in', remoteAddress: ip, payload: { username } });

  it('answers 429 with Retry-After and the v4 envelope past the limit, per IP and per credential', async () => {
    const [a] = apps as [FastifyInstance];
    for (let i = 0; i < LIMIT; i++) expect((await signIn(a, '10.0.0.1', `user${i}@example.com`)).statusCode).toBe(200);

    const refused = await signIn(a, '10.0.0.1', 'someone-new@example.com');
    expect(refused.statusCode).toBe(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.json()).toEqual({
      ok: false,
      error: {
        code: 'rate_limited',
        message: `Too many requests: the test_sign_in limit allows ${LIMIT} per 60 s per ip; retry after ${retryAfter} s`,
      },
      meta: { requestId: refused.headers['x-request-id'] },
    });

    // Another address is not refused for the first one's traffic…
    expect((await signIn(a, '10.0.0.2', 'victim@example.com')).statusCode).toBe(200);
    // …but one credential tried from many addresses is (distributed guessing).
    for (let i = 3; i < LIMIT + 2; i++) await signIn(a, `10.0.1.${i}`, 'victim@example.com');
    const perCredential = await signIn(a, '10.0.2.1', 'victim@example.com');
    expect(perCredential.statusCode).toBe(429);
    expect(perCredential.json().error.message).toContain('per credential');

    const metrics = (await a.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/^svc_rate_limited_total\{limit="test_sign_in"\} [1-9]/m);
  });

  it(kind === 'redis' ? 'shares the count between instances' : 'counts each instance on its own', async () => {
    const [a, b] = apps as [FastifyInstance, FastifyInstance];
    for (let i = 0; i < LIMIT; i++) expect((await signIn(a, '10.9.0.1', `shared${i}@example.com`)).statusCode).toBe(200);
    expect((await signIn(b, '10.9.0.1', 'elsewhere@example.com')).statusCode).toBe(kind === 'redis' ? 429 : 200);
  });
});
