import type { Authenticator } from '../../access/authenticate.js';
import type { DomainDeps } from '../deps.js';
import { sql } from '../../store/sql.js';
import type { DemoData } from '../demo.js';
import { registerDeviceInUse } from '../inventory.js';
import { createOrder, createPurchaseOrder } from './create.js';
import { operatorActor, recordOrderEvent, type OrderEventInput } from './events.js';

const DAY_MS = 86_400_000;

export interface DemoOrders {
  deployment: string;
  offboarding: string;
  maintenance: string;
  collection: string;
  purchase: string;
}

/** The admin's principal comes from its key, as on a request. */
type DemoOrderDeps = DomainDeps & { auth: Authenticator };

/**
 * Demo orders in several states, with history and tracking, placed and moved through the same
 * functions as the API: the admin places them as of some days ago, the operator posts the
 * logistics events that followed. Needs the demo data (seedDemo) and its admin key.
 */
export async function seedDemoOrders(core: DemoOrderDeps, demo: DemoData): Promise<DemoOrders> {
  const admin = await core.auth.authenticate({ 'x-api-key': demo.apiKeys.admin });
  const operator = await operatorActor(core.db);
  const start = core.now().getTime();
  const daysAgo = (days: number) => new Date(start - days * DAY_MS);
  // A core whose clock reads `days` ago, so an order is placed in the past.
  const placedDaysAgo = (days: number): DemoOrderDeps => ({ ...core, now: () => daysAgo(days) });
  const post = async (orderId: string, days: number, ...events: OrderEventInput[]) => {
    for (const event of events) await recordOrderEvent(core, operator, orderId, { ...event, occurredAt: daysAgo(days).toISOString() });
  };

  const deployment = await createOrder(placedDaysAgo(4), admin, {
    orderType: 'Deployment',
    employeeId: demo.employees.dana,
    productIds: [demo.devices['stockLaptopDe1']!],
  });
  await post(deployment.id, 3, { type: 'status', status: 'In Progress', note: 'Imaged and packed at the Berlin warehouse' });
  await post(
    deployment.id,
    2,
    { type: 'shipment', carrier: 'DHL', trackingNumber: '00340434161094042557', direction: 'outbound' },
    { type: 'status', status: 'Shipped' },
  );

  const offboarding = await createOrder(placedDaysAgo(6), admin, {
    orderType: 'Offboarding',
    employeeId: demo.employees.hans,
    productIds: [demo.devices['hansDesktop']!],
    dispositions: [{ productId: demo.devices['hansDesktop']!, action: 'wipe_and_redeploy' }],
    pickupWindow: { start: daysAgo(5).toISOString(), end: daysAgo(3).toISOString() },
  });
  await post(offboarding.id, 5, { type: 'status', status: 'In Progress', note: 'Courier pickup booked' });
  await post(offboarding.id, 3, { type: 'delay', reason: 'awaiting_pickup', note: 'Nobody at the address during the pickup window' });

  const maintenance = await createOrder(placedDaysAgo(12), admin, {
    orderType: 'Maintenance',
    employeeId: demo.employees.erik,
    productIds: [demo.devices['erikLaptop']!],
  });
  await post(maintenance.id, 11, { type: 'status', status: 'In Progress' });
  await post(maintenance.id, 10, { type: 'device', productId: demo.devices['erikLaptop']!, status: 'received' });
  await post(maintenance.id, 8, { type: 'device', productId: demo.devices['erikLaptop']!, status: 'repaired', note: 'Keyboard replaced' });
  await post(maintenance.id, 7, { type: 'status', status: 'Completed' });

  // Sofia has no device in the base demo: she gets the phone her Collection picks up.
  const sofiaPhone = await registerDeviceInUse(core.db, admin, demo.employees.sofia, {
    serialNumber: 'SN-AC-DEMO-SOFIA-1',
    productType: 'Mobile',
    manufacturer: 'Samsung',
    model: 'Galaxy S23',
    specs: { ramGb: 8, storageGb: 128, releaseYear: 2023 },
    condition: 'Fair',
  });
  const collection = await createOrder(placedDaysAgo(1), admin, {
    orderType: 'Collection',
    employeeId: demo.employees.sofia,
    productIds: [sofiaPhone.id],
    dispositions: [{ productId: sofiaPhone.id, action: 'return_to_stock' }],
  });

  const [laptop] = await core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'ThinkPad X1 Carbon Gen 12'`);
  const purchase = await createPurchaseOrder(placedDaysAgo(2), admin, {
    orderType: 'Purchase for Inventory',
    companyId: demo.companies.acme,
    items: [{ itemId: laptop!.id, quantity: 5, country: 'DE' }],
  });
  await post(purchase.id, 1, { type: 'status', status: 'In Progress', note: 'Ordered from Lenovo' });

  return {
    deployment: deployment.id,
    offboarding: offboarding.id,
    maintenance: maintenance.id,
    collection: collection.id,
    purchase: purchase.id,
  };
}
