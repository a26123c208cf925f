import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { isolatedEnv, listen, onLoopback, svc } from './svc-runner.js';

/*
 * svc retries a lost connection and a 502/503 within its timeout, sending a write's one
 * Idempotency-Key with every attempt: a proxy in front of the real service loses the first answer
 * after the service applied the write, and the retry gets that write's answer, not a second write.
 */

type Fault = 'lose the answer' | '503' | '502';

/** A TCP proxy to `upstream` whose first `faulty` connections suffer `fault`; later ones pass through. */
async function faultyProxy(upstream: string, fault: Fault, faulty = 1): Promise<{ url: string; connections: number; close(): Promise<void> }> {
  const { hostname, port } = new URL(upstream);
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((client) => {
    const index = connections++;
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
    if (index < faulty && fault !== 'lose the answer') {
      client.once('data', () => {
        const body = JSON.stringify({ ok: false, error: { code: 'upstream_unavailable', message: `proxy says ${fault}` }, meta: {} });
        client.end(`HTTP/1.1 ${fault} Proxy Fault\r\ncontent-type: application/json\r\nretry-after: 0\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      });
      return;
    }
    const service = connect(Number(port), hostname);
    sockets.add(service);
    service.on('error', () => client.destroy());
    service.on('close', () => sockets.delete(service));
    client.pipe(service);
    if (index < faulty) {
      // The service has applied the write and answers: the client never hears it.
      service.once('data', () => {
        client.destroy();
        service.destroy();
      });
    } else {
      service.pipe(client);
    }
  });
  const { url, close } = await onLoopback(server, sockets);
  return {
    url,
    get connections() {
      return connections;
    },
    close,
  };
}

describe('svc retries safely', () => {
  let t: TestApp;
  let serviceUrl: string;
  beforeAll(async () => {
    t = await startTestApp('pglite');
    serviceUrl = await listen(t);
  });
  afterAll(() => t.close());

  const teamsNamed = async (name: string) => (await t.core.db.query(sql`SELECT id FROM teams WHERE name = ${name}`)).length;
  const createTeam = (url: string, name: string) =>
    svc(['teams', 'create', '--company-id', t.demo.companies.acme, '--name', name, '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin!, '--format', 'json'], isolatedEnv());

  it('retries a write whose answer was lost with the same key: applied once, its answer printed', async () => {
    const proxy = await faultyProxy(serviceUrl, 'lose the answer');
    try {
      const run = await createTeam(proxy.url, 'Lost Answer Team');
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, data: { name: 'Lost Answer Team' } });
      expect(proxy.connections).toBe(2);
      expect(await teamsNamed('Lost Answer Team')).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('retries a 503 and a 502 from in front of the service', async () => {
    for (const fault of ['503', '502'] as const) {
      const proxy = await faultyProxy(serviceUrl, fault);
      try {
        const run = await createTeam(proxy.url, `After ${fault} Team`);
        expect(run.code).toBe(0);
        expect(proxy.connections).toBe(2);
        expect(await teamsNamed(`After ${fault} Team`)).toBe(1);
      } finally {
        await proxy.close();
      }
    }
  });

  it('gives up after four attempts, with the last answer', async () => {
    const proxy = await faultyProxy(serviceUrl, '503', Number.POSITIVE_INFINITY);
    try {
      const run = await svc(['whoami', '--api-url', proxy.url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin!], isolatedEnv());
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('proxy says 503');
      expect(proxy.connections).toBe(4);
    } finally {
      await proxy.close();
    }
  });
});
