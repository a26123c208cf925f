import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestApp, type TestApp } from '../helpers/harness.js';
import { insertOrder, insertShipment } from '../helpers/orders.js';

/*
 * The courier API slow, under concurrent get_tracking calls: each answers the stored events with
 * courier.state timeout soon after COURIER_TIMEOUT_MS, and no connection to the courier stays open.
 * The courier is a real HTTP server that holds every request far longer than the timeout.
 */

const TIMEOUT_MS = 300;
const COURIER_DELAY_MS = 10_000;
const CALLS = 30;
// Far above the timeout: a call held past it would be a hang, not a slow machine.
const BOUND_MS = TIMEOUT_MS + 5000;

describe('courier API slow under concurrent tracking calls', () => {
  let t: TestApp;
  let courier: Server;
  const open = new Set<Socket>();
  let requests = 0;

  beforeAll(async () => {
    courier = createServer((_request, response) => {
      requests++;
      setTimeout(() => response.end(JSON.stringify({ status: 'in_transit', events: [] })), COURIER_DELAY_MS).unref();
    });
    courier.on('connection', (socket: Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    });
    await new Promise<void>((resolve) => courier.listen(0, '127.0.0.1', resolve));
    const courierApiUrl = `http://127.0.0.1:${(courier.address() as { port: number }).port}`;
    t = await startTestApp('pglite', { config: { courierApiUrl, courierTimeoutMs: TIMEOUT_MS } });
  });
  afterAll(async () => {
    await t?.close();
    courier?.closeAllConnections();
    courier?.close();
  });

  it('answers every call with the stored events and courier.state timeout, and leaves no socket open', async () => {
    const id = await insertOrder(t, { orderType: 'Deployment', employeeId: t.demo.employees.dana, createdAt: new Date(), status: 'Shipped' });
    await insertShipment(t, id, { carrier: 'DHL', trackingNumber: 'JD-SLOW-1', createdAt: new Date() });

    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: CALLS }, () => client(t.app, t.demo.apiKeys.admin).get(`/v4/orders/${id}/tracking`)),
    );
    const elapsedMs = Date.now() - started;

    // On a loaded machine a call may time out before the courier has even read its request.
    expect(requests).toBeGreaterThan(0);
    expect(requests).toBeLessThanOrEqual(CALLS);
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200]));
    for (const answer of answers) {
      expect(answer.body.data.shipments[0].courier).toEqual({ state: 'timeout', detail: `no answer within ${TIMEOUT_MS} ms` });
    }
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    // Each timed-out call closed its connection, although the courier never answered.
    const closed = async () => {
      for (let waited = 0; open.size > 0 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      return open.size;
    };
    expect(await closed()).toBe(0);
  });
});
