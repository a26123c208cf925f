import type { Command } from 'commander';
import { output, storeOptions, withCore, type StoreFlags } from './store-options.js';

/** `orders`: the logistics side at the host; the operator reaches every company's orders (see operatorActor). */
export function addOrderCommands(program: Command): void {
  const orders = program.command('orders').description('post fulfilment and courier events on orders, as the logistics side');
  const EVENT_FIELDS = ['status', 'reason', 'note', 'carrier', 'trackingNumber', 'direction', 'productId', 'occurredAt'] as const;
  type EventFlags = StoreFlags & Partial<Record<(typeof EVENT_FIELDS)[number], string>>;
  const postEvent = async (orderId: string, type: string, flags: EventFlags) => {
    const [{ OrderEventBody }, { operatorActor, recordOrderEvent }] = await Promise.all([
      import('../../operations/order-events.js'),
      import('../../domain/orders/events.js'),
    ]);
    const given = EVENT_FIELDS.filter((field) => flags[field] !== undefined).map((field) => [field, flags[field]]);
    const { id, ...event } = OrderEventBody.parse({ ...Object.fromEntries(given), type, id: orderId });
    await withCore(flags, async (core) => {
      const recorded = await recordOrderEvent(core, await operatorActor(core.db), id, event);
      output(flags, recorded, `Order ${id}: recorded ${recorded.event.type}; status ${recorded.status}`);
    });
  };
  const eventOptions = (command: Command) =>
    storeOptions(command.argument('<orderId>').option('--note <text>', 'a note recorded with the event').option('--occurred-at <iso>', 'when it happened (default now)'));
  eventOptions(
    orders.command('advance').description('move an order to another status (see the transitions in the API docs)').requiredOption('--status <status>', 'the new status, any case'),
  ).action((orderId: string, flags: EventFlags) => postEvent(orderId, 'status', flags));
  eventOptions(
    orders
      .command('event')
      .description('post any order event (the body of POST /v4/orders/:id/events, as flags)')
      .requiredOption('--type <type>', 'status, delay, delay_resolved, shipment or device')
      .option('--status <status>', 'status: the new order status; device: the device status')
      .option('--reason <reason>', 'delay and delay_resolved: the delay reason')
      .option('--carrier <name>', 'shipment: the carrier')
      .option('--tracking-number <number>', 'shipment: the tracking number')
      .option('--direction <direction>', 'shipment: outbound or return')
      .option('--product-id <id>', 'device: the device on the order'),
  ).action((orderId: string, flags: EventFlags & { type: string }) => postEvent(orderId, flags.type, flags));
}
