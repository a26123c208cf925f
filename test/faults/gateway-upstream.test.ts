import { createServer, type Server, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGatewayApp } from '../../src/app/gateway-app.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { freePort, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * The v4 core hung or gone behind the separate gateway, under a burst of 100 concurrent v2 calls:
 * every caller gets the v2 error (504 or 502) within a bounded time, and the gateway leaves no
 * socket open to the upstream once they are answered.
 */

const TIMEOUT_MS = 500;
const BURST = 100;
// Far above the timeout: a call held past it would be a hang, not a slow machine.
const BOUND_MS = TIMEOUT_MS + 5000;
// Outside the brownouts of sunset.yaml, so v2 answers.
const NOW = new Date('2026-06-01T12:00:00Z');

/** An upstream that accepts connections and never answers, counting the sockets still open. */
async function hungUpstream(): Promise<{ server: Server; open: Set<Socket>; url: string }> {
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    // Read (and drop) what arrives, so that the client's close is seen.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, open, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < ms; ) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

describe('v4 upstream hung or down behind the separate gateway', () => {
  let t: TestApp;
  let legacyKey: string;

  beforeAll(async () => {
    t = await startTestApp('pglite', { config: { legacyV2TimeoutMs: TIMEOUT_MS }, core: { now: () => NOW } });
    const key = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'fault', scopes: ['api.teams.getAll'] });
    legacyKey = key.rawKey!;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Starts a gateway in front of `upstream`, fires the burst at it, and answers the statuses, codes and wall time. */
  async function burst(upstream: string) {
    const gateway: FastifyInstance = await buildGatewayApp(t.core, upstream);
    await gateway.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(gateway.server.address() as { port: number }).port}/v2/teams`;
    try {
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: BURST }, async () => {
          const response = await fetch(url, { headers: { 'x-api-key': legacyKey } });
          return { status: response.status, body: (await response.json()) as { error?: { status: number; code: string } } };
        }),
      );
      return { answers, elapsedMs: Date.now() - started };
    } finally {
      await gateway.close();
    }
  }

  it('answers 504 in the v2 shape to every caller of a hung core, and closes its sockets to it', async () => {
    const upstream = await hungUpstream();
    try {
      const { answers, elapsedMs } = await burst(upstream.url);
      expect(new Set(answers.map((a) => `${a.status} ${a.body.error?.status} ${a.body.error?.code}`))).toEqual(
        new Set(['504 504 v2_upstream_timeout']),
      );
      expect(elapsedMs).toBeLessThan(BOUND_MS);
      // Each timed-out call aborted its request: nothing is left open at the upstream.
      expect(await waitFor(() => upstream.open.size === 0, 10_000), `${upstream.open.size} sockets still open`).toBe(true);
    } finally {
      upstream.server.close();
    }
  });

  it('answers 502 in the v2 shape, promptly, when nothing listens upstream', async () => {
    const { answers, elapsedMs } = await burst(`http://127.0.0.1:${await freePort()}`);
    expect(new Set(answers.map((a) => `${a.status} ${a.body.error?.status} ${a.body.error?.code}`))).toEqual(
      new Set(['502 502 v2_upstream_unavailable']),
    );
    expect(elapsedMs).toBeLessThan(BOUND_MS);
  });
});
