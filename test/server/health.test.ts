import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * Liveness, readiness and the HTTP request histogram. Readiness follows the database; Redis down
 * only degrades it (up, down, back), proven in test/shared-state/redis-outage.test.ts.
 */

describe.each(backends())('health and HTTP metrics (%s)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(() => t.close());

  it('labels request durations with the route pattern, never the concrete URL', async () => {
    const eve = t.demo.employees.eve;
    const read = await t.app.inject({ url: `/v4/employees/${eve}`, headers: { 'x-api-key': t.demo.apiKeys.admin } });
    expect(read.statusCode).toBe(200);
    await t.app.inject({ url: '/no/such/route' });
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/^svc_http_request_duration_seconds_count\{route="\/v4\/employees\/:id",method="GET",status="200"\} 1$/m);
    expect(metrics).toMatch(/^svc_http_request_duration_seconds_count\{route="unmatched",method="GET",status="404"\} 1$/m);
    expect(metrics).not.toContain(eve);
  });
});

describe('readiness without a database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('pglite', { seed: false });
  });
  // The store is already closed: closing it again fails, which is no concern of this test.
  afterAll(() => t.close().catch(() => undefined));

  it('is live and ready while the database answers, not ready once it is gone', async () => {
    expect((await t.app.inject({ url: '/healthz' })).json()).toEqual({ ok: true });
    const ready = await t.app.inject({ url: '/readyz' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { ok: true, status: 'ready', checks: { database: 'up', redis: 'not_configured' } }]);

    // Closed under the running app, as a lost database would be (PGlite: PostgreSQL is shared by other tests).
    await t.core.db.close();
    const notReady = await t.app.inject({ url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toMatchObject({
      ok: false,
      status: 'not_ready',
      checks: { database: 'down', redis: 'not_configured' },
      error: { code: 'not_ready', message: 'Not ready: database down' },
    });
    // Liveness does not depend on the database: restarting the process would not bring it back.
    expect((await t.app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });
});
