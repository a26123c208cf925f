import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { pino } from 'pino';
import { loadConfig } from '../src/kit/config.js';
import { createCore } from '../src/app/core.js';
import { buildGatewayApp } from '../src/app/gateway-app.js';
import { sql } from '../src/store/sql.js';
import { createLegacyKey } from '../src/legacy/legacy-keys.js';
import { writeNginxMain } from '../test/helpers/deployment.js';
import { untilHealthy } from '../test/helpers/healthz.js';
import { freePort } from '../test/helpers/ports.js';
import { apartFromServers, capacityRatio, measureRounds, pairedRatio, startBenchServer, benchEachBackend, schemaUrl, SECRET_KEY, ROUNDS_NOTE, PAIRED_RATIO_NOTE, CAPACITY_RATIO_NOTE, type Backend, type LoadTarget, type RoundsMeasurement } from './lib.js';

/*
 * The cost of translation: a v2 single-record GET through the gateway, against the same record
 * through nginx (Debian's package) and @fastify/http-proxy as plain reverse proxies in front of the
 * core, and against direct v4; and a v2 full-list GET at 5,000 employees against a client walking
 * the v4 pages itself. On PostgreSQL also through the separate gateway process's code (HTTP to the core).
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const EMPLOYEES = 5_000;
const WALKS = 10;

async function timeIt(times: number, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < times; i++) await work();
  return Math.round((performance.now() - started) / times);
}

/** nginx as a plain reverse proxy (one worker, keep-alive to the upstream), config and logs in a temp dir. */
async function startNginx(upstream: string): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'));
  const port = await freePort();
  const { host } = new URL(upstream);
  const main = writeNginxMain(
    dir,
    `access_log off;
  upstream core { server ${host}; keepalive 32; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://core;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
    }
  }`,
  );
  const child: ChildProcess = spawn(...apartFromServers('nginx', ['-p', dir, '-c', main]), { stdio: 'inherit' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  if (!(await untilHealthy(url, child, { timeoutMs: 5_000 }))) {
    throw new Error('nginx did not start (is Debian’s nginx installed? apt-get install -y nginx)');
  }
  return {
    url,
    async stop() {
      child.kill('SIGQUIT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const urlOf = (app: { server: { address(): unknown } }) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

/** The separate gateway's app (v2 over HTTP to the core) on a second core of the same schema; PostgreSQL only. */
async function startApartGateway(schema: string, upstream: string) {
  const config = loadConfig({}, { databaseUrl: schemaUrl(schema), secretKey: SECRET_KEY, logLevel: 'silent' });
  const core = await createCore(config, { logger: pino({ level: 'silent' }) });
  const app = await buildGatewayApp(core, upstream);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: urlOf(app),
    async stop() {
      await app.close();
      await core.close();
    },
  };
}

async function run(backend: Backend) {
  const server = await startBenchServer(backend);
  const passthrough = Fastify();
  const nginx = await startNginx(server.baseUrl);
  const apart = server.schema ? await startApartGateway(server.schema, server.baseUrl) : undefined;
  try {
    const { core, demo } = server;
    await core.db.query(sql`
      INSERT INTO employees (id, company_id, display_name, email, country, team_id, address_one, city, zip_code)
      SELECT 'emp_bench' || lpad(g::text, 8, '0'), ${demo.companies.acme}, 'Bench Employee ' || g,
        'bench' || g || '@acme.example', 'DE', ${demo.teams.engineering}, 'Street ' || g, 'Berlin', '10115'
      FROM generate_series(1, ${EMPLOYEES}::int) AS g`);
    const legacy = await createLegacyKey(core, core.mappings, {
      companyId: demo.companies.acme,
      name: 'bench',
      scopes: ['api.employee.get', 'api.employees.getAll'],
    });
    const v4Key = demo.apiKeys.admin;
    await passthrough.register(proxy, { upstream: server.baseUrl, prefix: '/v4', rewritePrefix: '/v4' });
    await passthrough.listen({ host: '127.0.0.1', port: 0 });
    const proxyUrl = urlOf(passthrough);
    const id = demo.employees.dana;

    const legacyHeaders = { 'x-api-key': legacy.rawKey! };
    const v4Headers = { 'x-api-key': v4Key };
    // Each ratio's two rows are measured back to back (v2 and direct v4, then the proxies): the
    // machine's speed drifts within seconds, and rows further apart in a round drifted apart.
    const targets: Record<string, LoadTarget> = {
      v2: { url: `${server.baseUrl}/v2/employees/${id}`, headers: legacyHeaders },
      direct: { url: `${server.baseUrl}/v4/employees/${id}`, headers: v4Headers },
      plain: { url: `${proxyUrl}/v4/employees/${id}`, headers: v4Headers },
      viaNginx: { url: `${nginx.url}/v4/employees/${id}`, headers: v4Headers },
    };
    if (apart) targets.v2Apart = { url: `${apart.url}/v2/employees/${id}`, headers: legacyHeaders };
    const measured = await measureRounds(targets, SECONDS);
    const [v2, viaNginx, plain, direct] = [measured.v2!, measured.viaNginx!, measured.plain!, measured.direct!];
    const v2Apart = measured.v2Apart;
    const toNginx = (m: RoundsMeasurement) => pairedRatio(m, viaNginx);

    const v2List = await timeIt(WALKS, async () => {
      const response = await fetch(`${server.baseUrl}/v2/employees`, { headers: { 'x-api-key': legacy.rawKey! } });
      const body = (await response.json()) as unknown[];
      if (body.length < EMPLOYEES) throw new Error(`v2 list returned ${body.length}`);
    });
    const v4Walk = await timeIt(WALKS, async () => {
      let cursor: string | null = null;
      let count = 0;
      do {
        const url = `${server.baseUrl}/v4/employees?limit=50${cursor ? `&cursor=${cursor}` : ''}`;
        const body = (await (await fetch(url, { headers: { 'x-api-key': v4Key } })).json()) as {
          data: { employees: unknown[]; nextCursor: string | null };
        };
        count += body.data.employees.length;
        cursor = body.data.nextCursor;
      } while (cursor);
      if (count < EMPLOYEES) throw new Error(`v4 walk returned ${count}`);
    });
    const row = (label: string, m: RoundsMeasurement) => [backend, label, m.requestsPerSecond, m.p50, m.p99, m.errors, toNginx(m), m.cpuMicrosPerRequest];
    return [
      row('GET one employee: v2 through the gateway (in the core’s process)', v2),
      ...(v2Apart ? [row('GET one employee: v2 through the separate gateway (HTTP to the core)', v2Apart)] : []),
      row('GET one employee: v4 through nginx', viaNginx),
      row('GET one employee: v4 through @fastify/http-proxy', plain),
      row('GET one employee: v4 direct', direct),
      [backend, 'ratio v2 ÷ @fastify/http-proxy passthrough', pairedRatio(v2, plain), '', '', '', '', ''],
      [backend, 'ratio v2 ÷ v4 direct', pairedRatio(v2, direct), '', '', '', '', ''],
      [backend, 'capacity ratio v2 ÷ v4 direct (server CPU per request)', capacityRatio(v2, direct), '', '', '', '', ''],
      [backend, `full list of ${EMPLOYEES + 6}: v2 bare array (ms per list, mean of ${WALKS})`, '', v2List, '', 0, '', ''],
      [backend, `full list of ${EMPLOYEES + 6}: client walks v4 pages (ms per list, mean of ${WALKS})`, '', v4Walk, '', 0, '', ''],
    ];
  } finally {
    await apart?.stop();
    await nginx.stop();
    await passthrough.close();
    await server.close();
  }
}

await benchEachBackend('gateway', ['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors', '÷ nginx', 'CPU µs/req'], run, [
    `autocannon in a separate process, 10 connections, ${SECONDS} s per run, on loopback. The in-process gateway shares the core’s process (the default deployment); nginx (Debian’s package, one worker, keep-alive upstream) runs as its own process; @fastify/http-proxy and the separate gateway’s app run in the benchmark process, in front of the same core.`,
    '÷ nginx: the row’s throughput over that through nginx → v4, same store, same run (a paired ratio, see below). Proxies add a hop to the core; the in-process gateway does not.',
    ROUNDS_NOTE,
    PAIRED_RATIO_NOTE,
    `${CAPACITY_RATIO_NOTE} The nginx row leaves out nginx’s own CPU (another process); the @fastify/http-proxy and separate-gateway rows count the proxy with the core, both in this process.`,
    'Targets: a translated v2 call at ≥ 0.9× the throughput of the plain passthrough (issue 3) and of direct v4 (issue 10), in the same run.',
  ]);
