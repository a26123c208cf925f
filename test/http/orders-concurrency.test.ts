import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/store/ids.js';
import { sql } from '../../src/store/sql.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

const ROUNDS = 10;

// Real concurrency needs real connections: PostgreSQL only (CI always has it). PGlite runs one statement at a time.
describe.each(backends().filter((b) => b === 'postgres'))('concurrent orders for one device [%s]', (backend) => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => {
    t = await startTestApp(backend);
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => t.close());

  async function placeOrder(employeeId: string, deviceId: string) {
    const res = await fetch(`${baseUrl}/v4/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': t.demo.apiKeys.admin },
      body: JSON.stringify({ orderType: 'Deployment', employeeId, productIds: [deviceId] }),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it(`lets exactly one of two simultaneous orders take the device, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const deviceId = newId('dev');
      await t.core.db.query(sql`INSERT INTO devices (id, company_id, serial_number, product_type, category, manufacturer, model,
          condition, status, country)
        VALUES (${deviceId}, ${t.demo.companies.acme}, ${`SN-RACE-${round}`}, 'Laptops', 'Computers', 'Lenovo', 'ThinkPad T14',
          'New', 'Available', 'DE')`);

      const results = await Promise.all([placeOrder(t.demo.employees.dana, deviceId), placeOrder(t.demo.employees.hans, deviceId)]);

      expect(results.map((r) => r.status).sort(), `round ${round}`).toEqual([201, 422]);
      const winner = results.find((r) => r.status === 201)!;
      const loser = results.find((r) => r.status === 422)!;
      expect(loser.body.error.code).toBe('order_constraints_violated');
      expect(loser.body.error.details).toEqual([expect.objectContaining({ code: 'device_in_open_order', productId: deviceId })]);
      const holds = await t.core.db.query(sql`SELECT order_id AS "orderId" FROM device_holds WHERE device_id = ${deviceId}`);
      expect(holds).toEqual([{ orderId: winner.body.data.id }]);
      // The loser rolled back whole: no order of theirs requests the device.
      const requests = await t.core.db.query(sql`SELECT order_id AS "orderId" FROM order_devices WHERE device_id = ${deviceId}`);
      expect(requests).toEqual([{ orderId: winner.body.data.id }]);
    }
  });
});
