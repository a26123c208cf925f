import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoOrders, type DemoOrders } from '../../src/domain/orders/demo-orders.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { connect, data, textJson, type Connected } from './support/mcp.js';

/*
 * The official SDK client validates every structuredContent against the tool's outputSchema once it
 * has listed the tools, and throws when it does not match: each call here is that check. The demo
 * orders fill what the output schemas type and an empty store leaves null (dispositions, the pickup
 * window, purchased items, device events), and one order more has a legal hold.
 */
describe.each(backends())('tool results against their output schemas, through the SDK client [%s]', (backend) => {
  let s: ListeningTestApp;
  let orders: DemoOrders;
  let admin: Connected;
  let tools: Tool[];
  beforeAll(async () => {
    s = await startListeningApp(backend);
    orders = await seedDemoOrders(s.core, s.demo);
    admin = await connect(s.mcpUrl, s.demo.apiKeys.admin);
    // Listing is what arms the client's validation.
    tools = (await admin.client.listTools()).tools;
  });
  afterAll(async () => {
    await admin.close();
    await s.close();
  });

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await admin.client.callTool({ name, arguments: args });
    const structured = data(result);
    expect(textJson(result), name).toEqual(structured);
    return structured;
  };

  it('answers every order read in the form its schema declares, the typed order fields filled', async () => {
    const held = await call('create_order', {
      orderType: 'Deployment',
      employeeId: s.demo.employees.dana,
      productIds: [s.demo.devices['stockTablet']!],
      legalHold: { caseId: 'LH-2026-7', reason: 'Pending audit', until: '2027-01-31' },
    });
    expect(held.legalHold).toEqual({ caseId: 'LH-2026-7', reason: 'Pending audit', until: '2027-01-31' });

    for (const id of [...Object.values(orders), held.id]) {
      for (const name of ['get_order', 'get_order_history', 'get_order_sla', 'get_tracking']) await call(name, { id });
    }
    expect((await call('list_orders', {})).orders).toHaveLength(6);

    const offboarding = await call('get_order', { id: orders.offboarding });
    expect(offboarding.dispositions).toEqual([{ productId: s.demo.devices['hansDesktop'], action: 'wipe_and_redeploy' }]);
    expect(offboarding.pickupWindow).toEqual({ start: expect.any(String), end: expect.any(String) });
    const purchase = await call('get_order', { id: orders.purchase });
    expect(purchase.items).toEqual([expect.objectContaining({ quantity: 5, country: 'DE', unitPrice: expect.any(Number), leadTimeDays: expect.any(Number) })]);
    const history = await call('get_order_history', { id: orders.maintenance });
    expect(history.events.some((e: { data: Record<string, unknown> }) => Object.keys(e.data).length > 0)).toBe(true);
  });

  // The control: a schema that constrained nothing would pass the test above whatever the service answered.
  it('uses a validator that refuses what the schema does not describe', async () => {
    const order = await call('get_order', { id: orders.purchase });
    const check = new AjvJsonSchemaValidator().getValidator(tools.find((t) => t.name === 'get_order')!.outputSchema!);
    expect(check(order).valid).toBe(true);
    expect(check({ ...order, legalHold: 'on hold' }).valid).toBe(false);
    expect(check({ ...order, items: [{ itemId: order.items[0].itemId }] }).valid).toBe(false);
    expect(check({ ...order, employeeId: 7 }).valid).toBe(false);
  });
});
