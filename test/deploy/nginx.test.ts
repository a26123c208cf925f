import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { adminQuery, backends, freePort, TEST_SECRET_KEY } from '../helpers/harness.js';
import { Deployment, deployFile, Nginx, readEnvFile, sampleSum, send, type Answer } from '../helpers/deployment.js';
import { redisUrl, uniquePrefix } from '../shared-state/redis-support.js';

/*
 * deploy/nginx/device-lifecycle-service.conf as an operator installs it (addresses substituted as
 * docs/deployment.md says), in front of two cores and a gateway started from deploy/systemd's units:
 * its timings checked against the drain, nginx's own check, requests answered by both cores and the
 * gateway, and a core stopped and started again under requests without one failing.
 */

const run = promisify(execFile);
// Its directives, without the comments.
const shipped = readFileSync(deployFile('nginx/device-lifecycle-service.conf'), 'utf8').replace(/#.*$/gm, '');
const coreEnv = readEnvFile(deployFile('systemd/core.env'));
const seconds = (value: string) => Number(/^(\d+)s$/.exec(value)?.[1] ?? NaN) * 1000;

describe('the shipped nginx configuration, read', () => {
  const drainMs = Number(coreEnv.SHUTDOWN_DRAIN_MS);

  it('closes idle upstream connections before a core\'s drain ends, and before the core would', () => {
    const timeouts = [...shipped.matchAll(/^\s*keepalive_timeout (\S+);/gm)].map((match) => seconds(match[1]!));
    expect(timeouts).toHaveLength(2);
    for (const timeout of timeouts) expect(timeout).toBeLessThan(drainMs);
  });

  it('marks a core failed for no longer than the drain, so a restarted core is back before its neighbour stops', () => {
    const failTimeouts = [...shipped.matchAll(/fail_timeout=(\S+?);/g)].map((match) => seconds(match[1]!));
    expect(failTimeouts.length).toBeGreaterThanOrEqual(3);
    for (const timeout of failTimeouts) expect(timeout).toBeLessThanOrEqual(drainMs);
  });

  it('retries on errors, timeouts, 502 and 503, a write that was sent only when it carries an Idempotency-Key', () => {
    const retries = [...shipped.matchAll(/proxy_next_upstream (.+);/g)].map((match) => match[1]);
    expect(retries).toEqual(['error timeout http_502 http_503', 'error timeout http_502 http_503 non_idempotent', 'error timeout http_502 http_503']);
    expect(/location @keyed_write \{[^}]*non_idempotent/.test(shipped)).toBe(true);
    expect(shipped).toMatch(/if \(\$http_idempotency_key ~ \.\) \{\s*return 418;/);
  });
});

describe.skipIf(!inject('nginx'))('nginx with the shipped configuration', () => {
  describe.each(backends().filter((b) => b === 'postgres' && redisUrl()))('in front of two cores and a gateway [%s]', () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    let deployment: Deployment;
    let employeeId: string;
    const viaNginx = (path: string, options: Parameters<typeof send>[1] = {}) => send(`${deployment.nginx.url}${path}`, { agent: deployment.nginx.agent, ...options });
    const admin = () => ({ 'x-api-key': deployment.demo.apiKeys.admin });
    const employeeReads = async (url: string) => sampleSum(await (await fetch(`${url}/metrics`)).text(), 'svc_http_request_duration_seconds_count', { route: '/v4/employees/:id', status: '200' });

    beforeAll(async () => {
      await adminQuery(`CREATE SCHEMA ${schema}`);
      const databaseUrl = new URL(inject('postgresUrl'));
      databaseUrl.searchParams.set('options', `-c search_path=${schema}`);
      deployment = await Deployment.start({ DATABASE_URL: databaseUrl.toString(), REDIS_URL: redisUrl(), REDIS_KEY_PREFIX: uniquePrefix(), SVC_SECRET_KEY: TEST_SECRET_KEY }, freePort);
      const list = await viaNginx('/v4/employees?limit=1', { headers: admin() });
      employeeId = (JSON.parse(list.body) as { data: { employees: Array<{ id: string }> } }).data.employees[0]!.id;
    }, 120_000);

    afterAll(async () => {
      await deployment?.stop();
      await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
    });

    it('passes nginx -t', async () => {
      const dir = deployment.nginx.dir;
      const { stderr } = await run('nginx', ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')]);
      expect(stderr).toContain('syntax is ok');
      expect(stderr).toContain('test is successful');
    });

    it('sends requests to both cores', async () => {
      const before = await Promise.all(deployment.cores.map((core) => employeeReads(core.url)));
      for (let i = 0; i < 20; i++) expect((await viaNginx(`/v4/employees/${employeeId}`, { headers: admin() })).status).toBe(200);
      const after = await Promise.all(deployment.cores.map((core) => employeeReads(core.url)));
      const served = after.map((count, i) => count - before[i]!);
      expect(served[0]! + served[1]!).toBe(20);
      expect(served[0]).toBeGreaterThan(0);
      expect(served[1]).toBeGreaterThan(0);
    });

    it('sends /v2 to the gateway, which reaches the cores through nginx', async () => {
      const v2 = await viaNginx('/v2/employees', { headers: { 'x-api-key': deployment.demo.legacyKeys.full } });
      expect(v2.status, v2.body).toBe(200);
      const gatewayMetrics = await (await fetch(`${deployment.gateway.url}/metrics`)).text();
      expect(sampleSum(gatewayMetrics, 'svc_v2_requests_total', { route: 'GET /employees' })).toBe(1);
    });

    it('redirects plain http to https', async () => {
      const answer = await send(`http://127.0.0.1:${deployment.nginx.addresses.http}/v4/me`, { headers: { host: 'svc.example.com' } });
      expect(answer.status).toBe(308);
      expect(answer.headers.location).toBe('https://svc.example.com/v4/me');
    });

    it('forwards the client\'s address: /metrics is not served to a caller through it', async () => {
      const answer = await viaNginx('/metrics');
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body).error.code).toBe('metrics_loopback_only');
    });

    it('moves a write that was sent to a core which reset it to the other core only when it carries an Idempotency-Key', async () => {
      // A core that takes the request, then resets its connection: what nginx meets when a core closes its port.
      const resetting = createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
      await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
      const resettingAt = `127.0.0.1:${(resetting.address() as AddressInfo).port}`;
      const realCore = deployment.nginx.addresses.cores[1]!;
      const nginx = await Nginx.start({ cores: [Number(resettingAt.split(':')[1]), realCore], gateways: deployment.nginx.addresses.gateways, http: await freePort(), https: await freePort(), gatewayToCores: await freePort() });
      try {
        const createTeam = (headers: Record<string, string>) =>
          send(`${nginx.url}/v4/teams`, { agent: nginx.agent, method: 'POST', headers: { ...admin(), ...headers }, body: JSON.stringify({ companyId: deployment.demo.companies.acme, name: `moved ${randomUUID()}` }) });
        const sentTo = () => nginx.accessLog().at(-1)!;
        // Round robin, per nginx worker: unkeyed writes until one is sent to the resetting core, which only
        // that core answers with a 502 (the real one creates the team).
        let unkeyed = await createTeam({});
        await expect
          .poll(async () => {
            if (unkeyed.status !== 502) unkeyed = await createTeam({});
            return unkeyed.status;
          }, { timeout: 20_000 })
          .toBe(502);
        // nginx writes a request's log line as it finishes it, which can come after the answer reached us.
        await expect.poll(sentTo).toMatch(new RegExp(`^POST /v4/teams 502 upstreams=${resettingAt} `));

        // Once nginx tries the resetting core again (after its fail_timeout), a keyed write it reset goes on to the real core.
        await expect
          .poll(async () => {
            expect((await createTeam({ 'idempotency-key': randomUUID() })).status).toBe(201);
            return sentTo();
          }, { timeout: 20_000 })
          .toMatch(new RegExp(`^POST /v4/teams 201 upstreams=${resettingAt}, 127\\.0\\.0\\.1:${realCore} statuses=502, 201$`));
      } finally {
        await nginx.stop();
        resetting.close();
      }
    }, 60_000);

    it('answers every read and keyed write while a core drains and stops, and sends to it again once restarted', async () => {
      const answers: Array<Answer & { request: string }> = [];
      let running = true;
      const acme = deployment.demo.companies.acme;
      const client = async (n: number) => {
        for (let i = 0; running; i++) {
          const write = i % 2 === 1;
          const request = write ? 'POST /v4/teams' : 'GET /v4/employees/:id';
          const answer = write
            ? viaNginx('/v4/teams', { method: 'POST', headers: { ...admin(), 'idempotency-key': randomUUID() }, body: JSON.stringify({ companyId: acme, name: `nginx ${n}-${i}-${randomUUID()}` }) })
            : viaNginx(`/v4/employees/${employeeId}`, { headers: admin() });
          // A failed connection counts as a failed request.
          answers.push({ request, ...(await answer.catch((error: unknown) => ({ status: 0, headers: {}, body: String(error) }))) });
        }
      };
      const clients = [0, 1, 2, 3].map(client);
      const stopping = deployment.cores[0]!;
      expect(await stopping.stop()).toBe(0);
      // Requests after the port closed too: nginx must skip the stopped core.
      const answeredWhileDrained = answers.length;
      await expect.poll(() => answers.length).toBeGreaterThan(answeredWhileDrained + 20);
      running = false;
      await Promise.all(clients);
      const failed = answers.filter((answer) => answer.status !== 200 && answer.status !== 201);
      expect(failed.map((answer) => `${answer.request}: ${answer.status} ${answer.body.slice(0, 200)}`), deployment.nginx.errorLog()).toEqual([]);
      expect(answers.filter((answer) => answer.status === 201).length).toBeGreaterThan(0);

      const restarted = await deployment.startCore(0);
      const before = await employeeReads(restarted.url);
      // Back in nginx's rotation once its fail_timeout has passed.
      await expect
        .poll(async () => {
          await viaNginx(`/v4/employees/${employeeId}`, { headers: admin() });
          return employeeReads(restarted.url);
        }, { timeout: 20_000 })
        .toBeGreaterThan(before);
    }, 90_000);
  });
});
