import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { NOT_USER_BOUND_MESSAGE } from '../../src/access/authenticate.js';
import { loadConfig } from '../../src/kit/config.js';
import { createCore, type Core } from '../../src/app/core.js';
import { createGatewayCore, type GatewayCore } from '../../src/app/gateway-core.js';
import { buildGatewayApp } from '../../src/app/gateway-app.js';
import { mintSuccessorKey } from '../../src/migration/cutover.js';
import { createLegacyKey, resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import { sql } from '../../src/store/sql.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { MAIL_RETRY_INTERVAL_MS } from '../../src/domain/mail.js';
import { backends, client, TEST_SECRET_KEY, freePort, adminQuery, EVENTUALLY } from '../helpers/harness.js';
import { LegacyV2Server } from '../helpers/legacy-v2.js';
import { runCommandSync, ServerProcess, SVC_SERVER } from '../helpers/server-process.js';

/*
 * The separate deployment: the core runs as its own process, the gateway in this one on the same
 * PostgreSQL schema, reaching the core over HTTP. PGlite cannot be shared, so PostgreSQL only.
 * The gateway runs on what `svc-server gateway` builds (createGatewayCore); a full core in this
 * process does what an operator or admin would (registering keys, minting successors).
 */

// Outside the brownouts of sunset.yaml, so v2 answers.
const NOW = new Date('2026-06-01T12:00:00Z');
type Doc = Record<string, unknown>;

describe.each(backends().filter((b) => b === 'postgres'))('v2 gateway apart from the core [%s]', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  let env: NodeJS.ProcessEnv;
  let coreProcess: ServerProcess;
  let core: GatewayCore;
  let operator: Core;
  let gateway: FastifyInstance;
  let upstream: string;
  let demo: { apiKeys: Record<string, string>; legacyKeys: { full: string; addressOnly: string } };

  beforeAll(async () => {
    await adminQuery(`CREATE SCHEMA ${schema}`);
    const url = new URL(inject('postgresUrl'));
    url.searchParams.set('options', `-c search_path=${schema}`);
    env = { ...process.env, LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '0', DATABASE_URL: url.toString(), SVC_SECRET_KEY: TEST_SECRET_KEY };
    const seeded = runCommandSync(['seed', '--demo', '--json'], env);
    expect(seeded.status, seeded.stderr).toBe(0);
    demo = JSON.parse(seeded.stdout);

    coreProcess = await ServerProcess.start([], env);
    upstream = coreProcess.summary.url;

    const config = loadConfig({}, { databaseUrl: url.toString(), secretKey: TEST_SECRET_KEY, logLevel: 'silent', legacyV2TimeoutMs: 2000 });
    core = await createGatewayCore(config, { logger: pino({ level: 'silent' }), now: () => NOW });
    operator = await createCore(config, { logger: pino({ level: 'silent' }), now: () => NOW });
    gateway = await buildGatewayApp(core, upstream);
    await gateway.ready();
  }, 120_000);

  afterAll(async () => {
    await coreProcess?.kill9();
    await gateway?.close();
    await core?.close();
    await operator?.close();
    await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
  });

  /** A counter of the gateway's own /metrics (0 before its first increment). */
  const metric = async (series: string): Promise<number> => {
    const text = (await gateway.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };
  const employees = async (): Promise<Doc[]> => (await client(gateway, demo.legacyKeys.full).get('/v2/employees')).body;

  it('answers a v2 list as a bare array and a v2 read with the legacy fields', async () => {
    const list = await employees();
    expect(Array.isArray(list)).toBe(true);
    const eve = list.find((e) => e.email === 'eve@acme.example');
    expect(eve).toMatchObject({ deliveryAddress: { city: 'San Francisco', country: 'US' } });

    const read = await client(gateway, demo.legacyKeys.full).get(`/v2/employees/${eve!.id as string}`);
    expect(read.status).toBe(200);
    expect(read.body).toHaveProperty('secondaryEmail');
    expect(read.body).toMatchObject({ id: eve!.id, deliveryAddress: { city: 'San Francisco', country: 'US' } });
    expect(read.headers.sunset).toBe('Fri, 01 Jan 2027 00:00:00 GMT');
    expect(read.headers.deprecation).toBe('@1751328000');
  });

  it('creates through the core, follow-up included', async () => {
    const res = await client(gateway, demo.legacyKeys.full).post('/v2/employees', {
      displayName: 'Vera Vintage',
      email: 'vera@acme.example',
      secondaryEmail: 'vera@home.example',
      deliveryAddress: { addressOne: 'Hauptstraße 1', addressTwo: 'Hinterhaus', city: 'Berlin', zipCode: '10115', country: 'DE', phone: '+49 30 1234' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ secondaryEmail: 'vera@home.example', deliveryAddress: { addressTwo: 'Hinterhaus', phone: '+49 30 1234' } });
    // The core stored it: its v4 read through the proxy agrees.
    const v4 = await client(gateway, demo.apiKeys.admin).get(`/v4/employees/${res.body.id as string}`);
    expect(v4.status).toBe(200);
    expect(v4.body.data).toMatchObject({ email: 'vera@acme.example', personalEmail: 'vera@home.example' });
  });

  it('serves what a v2 answer links to: the migration guide and both API documents, from the core', async () => {
    const [someone] = await employees();
    const read = await client(gateway, demo.legacyKeys.full).get(`/v2/employees/${someone!.id as string}`);
    expect(read.headers.link).toContain('</docs/migration#get-employees-id>; rel="deprecation"');
    const guide = await gateway.inject({ url: '/docs/migration' });
    expect(guide.statusCode).toBe(200);
    expect(guide.body).toContain('<section id="get-employees-id"');
    for (const url of ['/openapi.json', '/openapi-v2.json', '/docs/migration.json']) {
      expect((await gateway.inject({ url })).statusCode, url).toBe(200);
    }
    expect((await gateway.inject({ url: '/openapi-v2.json' })).json().info.title).toContain('v2 (deprecated)');
  });

  // Hostile review: a path parameter taken from the body was stringified as it came, a 500 for an object
  // whose toString is not a function, and `..` or a missing one reached another v4 path.
  it.each([
    ['an object', { toString: 1 }],
    ['a missing one', undefined],
    ['a dot segment', '..'],
  ])('answers a path parameter from the body that is %s with 400, as in process', async (_case, employeeId) => {
    const res = await client(gateway, demo.legacyKeys.full).post('/v2/employees/products/productInUse', {
      ...(employeeId === undefined ? {} : { employeeId }),
      serialNumber: 'SN-APART-1',
      productType: 'Mice',
      manufacturer: 'Logitech',
      model: 'MX Master 3S',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'validation_failed', details: [{ field: 'id' }] });
  });

  it('keeps the v2 403 of a key lacking the route scope', async () => {
    const [someone] = await employees();
    const res = await client(gateway, demo.legacyKeys.addressOnly).patch(`/v2/employees/${someone!.id as string}`, { displayName: 'X' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ status: 403, code: 'missing_scope' });
  });

  it('proxies v4 to the core, and refuses a legacy key there itself', async () => {
    const me = await client(gateway, demo.apiKeys.admin, { 'x-request-id': 'apart-me-1' }).get('/v4/me');
    expect(me.status).toBe(200);
    expect(me.body.data.user.email).toBe('admin@demo.example');
    expect(me.headers['x-request-id']).toBe('apart-me-1');
    expect(me.body.meta.requestId).toBe('apart-me-1');

    for (const [method, url, surface] of [
      ['GET', '/v4/me', 'rest'],
      ['GET', '/v4/employees', 'rest'],
      ['POST', '/mcp', 'mcp'],
      ['POST', '/api/oauth/token', 'oauth'],
    ] as const) {
      const counter = `svc_v4_legacy_key_rejections_total{surface="${surface}"}`;
      const before = await metric(counter);
      const api = client(gateway, demo.legacyKeys.full);
      const legacy = method === 'GET' ? await api.get(url) : await api.post(url, {});
      expect(legacy.status, url).toBe(401);
      expect(legacy.body.error).toEqual({ code: 'api_key_not_user_bound', message: NOT_USER_BOUND_MESSAGE });
      expect(await metric(counter)).toBe(before + 1);
    }
  });

  it('passes Mcp-Session-Id both ways and streams the answer', async () => {
    // A stand-in MCP endpoint: the core has none yet, and the proxy must not care what answers.
    const seen: string[] = [];
    const mcp = createHttpServer((req, res) => {
      seen.push(String(req.headers['mcp-session-id']));
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'session-2' });
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 20);
    });
    await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
    const proxied = await buildGatewayApp(core, `http://127.0.0.1:${(mcp.address() as AddressInfo).port}`);
    try {
      const res = await proxied.inject({ method: 'POST', url: '/mcp', headers: { 'mcp-session-id': 'session-1', 'content-type': 'application/json' }, payload: '{}' });
      expect(res.statusCode).toBe(200);
      expect(seen).toEqual(['session-1']);
      expect(res.headers['mcp-session-id']).toBe('session-2');
      expect(res.body).toBe('data: one\n\ndata: two\n\n');
    } finally {
      await proxied.close();
      mcp.close();
    }
  });

  it('answers 504 in the v2 shape when the core is too slow', async () => {
    const silent = createHttpServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const slow = await buildGatewayApp(core, `http://127.0.0.1:${(silent.address() as AddressInfo).port}`);
    try {
      const res = await client(slow, demo.legacyKeys.full).get('/v2/teams');
      expect(res.status).toBe(504);
      expect(res.body.error).toMatchObject({ status: 504, code: 'v2_upstream_timeout' });
      expect(res.body.error.message).toContain('2000 ms');
    } finally {
      await slow.close();
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('runs as svc-server gateway on a database as new as its build or newer, and refuses to without PostgreSQL', async () => {
    // A core upgraded first has applied a migration this build does not know: the gateway still serves.
    await adminQuery(`INSERT INTO ${schema}.schema_migrations (id) VALUES ('9999_from_a_newer_core')`);
    const port = await freePort();
    const gatewayProcess = ServerProcess.launch([process.execPath, SVC_SERVER, 'gateway', '--upstream', upstream, '--port', String(port)], { url: `http://127.0.0.1:${port}`, env });
    try {
      await gatewayProcess.ready({ probe: '/healthz', timeoutMs: 30_000 });
      // /v4 rather than /v2, whose answer depends on today's place in the sunset calendar.
      const me = (key: string) => fetch(`${gatewayProcess.url}/v4/me`, { headers: { 'x-api-key': key } });
      expect((await me(demo.apiKeys.admin!)).status).toBe(200);
      expect((await me(demo.legacyKeys.full)).status).toBe(401);
      // Its own metrics: the gateway's, the process's, its log output's.
      const metrics = await (await fetch(`${gatewayProcess.url}/metrics`)).text();
      for (const series of ['svc_v4_legacy_key_rejections_total{surface="rest"} 1', 'svc_v2_sunset_timestamp_seconds ', 'process_cpu_user_seconds_total ', 'svc_log_lines_dropped_total ']) {
        expect(metrics).toContain(series);
      }
    } finally {
      await gatewayProcess.stop();
      await adminQuery(`DELETE FROM ${schema}.schema_migrations WHERE id = '9999_from_a_newer_core'`);
    }
    const embedded = runCommandSync(['gateway', '--upstream', upstream], { ...env, DATABASE_URL: '' });
    expect(embedded.status).toBe(1);
    expect(embedded.stderr).toContain('set DATABASE_URL');
  });

  it('refuses a database the core has not migrated, and creates nothing in it', async () => {
    const empty = `t_${randomBytes(6).toString('hex')}`;
    await adminQuery(`CREATE SCHEMA ${empty}`);
    try {
      const url = new URL(env.DATABASE_URL!);
      url.searchParams.set('options', `-c search_path=${empty}`);
      const gateway = async () => runCommandSync(['gateway', '--upstream', upstream, '--port', String(await freePort())], { ...env, DATABASE_URL: url.toString() });
      const refused = await gateway();
      expect(refused.status).toBe(1);
      // No schema at all: most likely a DATABASE_URL other than the core's, so the message says where it looked.
      expect(refused.stderr).toContain(`No service schema in database ${new URL(env.DATABASE_URL!).pathname.slice(1)}, schema ${empty}: is DATABASE_URL the one the core uses?`);
      const tables = await core.db.query(sql`SELECT table_name FROM information_schema.tables WHERE table_schema = ${empty}`);
      expect(tables).toEqual([]);
      // A schema a core of an older build migrated: the core must be upgraded first.
      await adminQuery(`CREATE TABLE ${empty}.schema_migrations (id text PRIMARY KEY); INSERT INTO ${empty}.schema_migrations VALUES ('${MIGRATIONS[0]!.id}')`);
      const behind = await gateway();
      expect(behind.status).toBe(1);
      expect(behind.stderr).toContain(`schema ${empty} lacks ${MIGRATIONS.length - 1} schema migration(s) this gateway needs (${MIGRATIONS[1]!.id} to ${MIGRATIONS.at(-1)!.id})`);
      expect(behind.stderr).toContain('start or upgrade the core');
    } finally {
      await adminQuery(`DROP SCHEMA ${empty} CASCADE`);
    }
  });

  it('builds no mailer: mail queued in the outbox is never sent to SMTP_URL', async () => {
    const connections: Socket[] = [];
    // Takes the connection a mailer would open, and drops it: the send fails at once.
    const smtp = createTcpServer((socket) => {
      connections.push(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const [company] = await core.db.query<{ id: string }>(sql`SELECT id FROM companies ORDER BY id LIMIT 1`);
    await core.db.query(sql`INSERT INTO outbox (id, company_id, kind, recipient, subject, body)
      VALUES ('mail_apart', ${company!.id}, 'test', 'someone@acme.example', 'Queued', 'Left for the core to send')`);
    const smtpUrl = `smtp://127.0.0.1:${(smtp.address() as AddressInfo).port}`;
    // The mailer sends on an interval: faked, so its turn comes at once; closing waits for a send under way.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const mailless = await createGatewayCore(loadConfig({}, { databaseUrl: env.DATABASE_URL, secretKey: TEST_SECRET_KEY, logLevel: 'silent', smtpUrl }), {
        logger: pino({ level: 'silent' }),
      });
      await vi.advanceTimersByTimeAsync(MAIL_RETRY_INTERVAL_MS);
      await mailless.close();
      expect(connections).toHaveLength(0);
      expect(await core.db.query(sql`SELECT status, attempts FROM outbox WHERE id = 'mail_apart'`)).toEqual([{ status: 'queued', attempts: 0 }]);
    } finally {
      vi.useRealTimers();
      smtp.close();
      await core.db.query(sql`DELETE FROM outbox WHERE id = 'mail_apart'`);
    }
  });

  it('serves the shadow report where the check runs, the caller authenticated by the core', { timeout: 60_000 }, async () => {
    const legacyPort = await freePort();
    const shadowConfig = {
      databaseUrl: env.DATABASE_URL,
      secretKey: TEST_SECRET_KEY,
      logLevel: 'silent',
      legacyV2Upstream: `http://127.0.0.1:${legacyPort}`,
      shadowSampleRate: 1,
      shadowTimeoutMs: 3000,
      shadowMaxInFlight: 1,
    };
    const shadowCore = await createGatewayCore(loadConfig({}, shadowConfig), { logger: pino({ level: 'silent' }), now: () => NOW });
    const shadowGateway = await buildGatewayApp(shadowCore, upstream);
    const key = await resolveLegacyKey(shadowCore, demo.legacyKeys.full);
    if (key.status !== 'active') throw new Error('the demo legacy key is not active');
    const legacy = new LegacyV2Server(shadowCore.db, new Map([[demo.legacyKeys.full, key.companyId]]), legacyPort);
    await legacy.start();
    legacy.plant = (path, body) => (path === '/teams' ? (body as Doc[]).slice(1) : body);
    const report = (apiKey: string) => client(shadowGateway, apiKey).get('/v4/admin/shadow-report');
    try {
      expect((await client(shadowGateway, demo.legacyKeys.full).get('/v2/teams')).status).toBe(200);
      await vi.waitFor(async () => expect((await report(demo.apiKeys.admin!)).body.data.totals.compared).toBe(1), EVENTUALLY);
      const found = (await report(demo.apiKeys.admin!)).body;
      expect(found).toMatchObject({ ok: true, data: { enabled: true, routes: [{ route: 'GET /teams', different: 1 }] } });
      expect(found.data.examples[0]).toMatchObject({ route: 'GET /teams', legacyKeyId: key.legacyKeyId, differences: [{ path: '[]', kind: 'added' }] });
      // The core, where the check does not run, has nothing to show.
      expect((await client(gateway, demo.apiKeys.admin).get('/v4/admin/shadow-report')).body.data.routes).toEqual([]);

      const refused = await report(demo.apiKeys.manager!);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('admin_only');
      // An integration's successor key holds mcp:company:read as an admin of its company, yet never reads the migration.
      const integration = await createLegacyKey(operator, operator.mappings, { companyId: key.companyId, name: 'Shadow reader', scopes: ['api.company.addresses.get'] });
      const grantor = { ...(await operator.auth.authenticate({ 'x-api-key': demo.apiKeys.admin })), companyIds: [key.companyId], capabilities: new Set(['mcp:company:read'] as const) };
      const successor = await mintSuccessorKey(operator, integration.id, grantor, { capabilities: ['mcp:company:read'] });
      const integrationAsks = await report(successor.successor.apiKey);
      expect([integrationAsks.status, integrationAsks.body.error.code]).toEqual([403, 'non_personal_user']);
      const unknown = await report('sk_live_not_a_key');
      expect(unknown.status).toBe(401);
      expect(unknown.body.ok).toBe(false);
      expect((await report(demo.legacyKeys.full)).status).toBe(401);
    } finally {
      await legacy.stop();
      await shadowGateway.close();
      await shadowCore.close();
    }
  });

  it('answers 502 in the v2 shape, promptly, once the core is down', async () => {
    await coreProcess.stop();
    const started = Date.now();
    const res = await client(gateway, demo.legacyKeys.full).get('/v2/teams');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ status: 502, code: 'v2_upstream_unavailable' });
    expect(await metric('svc_v2_upstream_errors_total{kind="v4_unreachable"}')).toBe(1);
  });
});
