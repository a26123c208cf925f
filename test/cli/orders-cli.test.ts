import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SVC_SERVER_STEPS_TIMEOUT_MS } from '../helpers/harness.js';
import { runCommandSync } from '../helpers/server-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
import { createOrder } from '../../src/domain/orders/create.js';
import { sql } from '../../src/store/sql.js';

// The operator's commands open the store themselves; PGlite is enough to exercise them.
describe('svc-server orders advance|event [pglite]', { timeout: SVC_SERVER_STEPS_TIMEOUT_MS }, () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let orderId: string;

  const run = (...args: string[]) => {
    const result = runCommandSync(args, env);
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-orders-'));
    env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
    const seeded = run('seed', '--demo', '--json');
    expect(seeded.code, seeded.stderr).toBe(0);
    const { apiKeys } = JSON.parse(seeded.stdout) as { apiKeys: { admin: string } };
    // Place an order in-process, then release the store for the commands.
    const core = await createCore(loadConfig({}, { dataDir, logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    try {
      const admin = await core.auth.authenticate({ 'x-api-key': apiKeys.admin });
      const [dana] = await core.db.query<{ id: string }>(sql`SELECT id FROM employees WHERE email = 'dana@acme.example'`);
      const [laptop] = await core.db.query<{ id: string }>(sql`
        SELECT id FROM devices WHERE company_id = 'co_acme' AND status = 'Available' AND product_type = 'Laptops' AND country = 'DE'
        ORDER BY id LIMIT 1`);
      orderId = (await createOrder(core, admin, { orderType: 'Deployment', employeeId: dana!.id, productIds: [laptop!.id] })).id;
    } finally {
      await core.close();
    }
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('advances an order as the operator, with the same rules as the API', async () => {
    const advanced = run('orders', 'advance', orderId, '--status', 'in progress', '--note', 'Packed in Berlin', '--json');
    expect(advanced.stderr).toBe('');
    expect(advanced.code).toBe(0);
    expect(JSON.parse(advanced.stdout)).toMatchObject({
      orderId,
      status: 'In Progress',
      event: { type: 'status_changed', statusFrom: 'Pending', statusTo: 'In Progress', note: 'Packed in Berlin', source: 'logistics' },
    });

    const invalid = run('orders', 'advance', orderId, '--status', 'Delivered');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('invalid_transition');
    expect(invalid.stderr).toContain('allowed next states: Shipped, On Hold, Completed, Cancelled');

    const shipment = run('orders', 'event', orderId, '--type', 'shipment', '--carrier', 'DHL', '--tracking-number', '00340434161094042557', '--direction', 'outbound', '--json');
    expect(shipment.code, shipment.stderr).toBe(0);
    expect(JSON.parse(shipment.stdout).event).toMatchObject({ type: 'shipment', data: { carrier: 'DHL', direction: 'outbound' } });

    const delay = run('orders', 'event', orderId, '--type', 'delay', '--reason', 'customs');
    expect(delay.code, delay.stderr).toBe(0);
    expect(delay.stdout).toContain(`Order ${orderId}: recorded delay; status In Progress`);

    const shipped = run('orders', 'advance', orderId, '--status', 'Shipped', '--json');
    expect(JSON.parse(shipped.stdout).status).toBe('Shipped');
  });

  it('names the bad argument, and reports an unknown order', () => {
    const badReason = run('orders', 'event', orderId, '--type', 'delay', '--reason', 'aliens');
    expect(badReason.code).toBe(1);
    expect(badReason.stderr).toContain('validation_failed');
    expect(badReason.stderr).toContain('reason');
    const badType = run('orders', 'event', orderId, '--type', 'teleport');
    expect(badType.code).toBe(1);
    expect(badType.stderr).toContain('type');
    const missing = run('orders', 'advance', 'ord_missing', '--status', 'Shipped');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
    const usage = run('orders', 'advance', orderId);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('--status');
  });
});
