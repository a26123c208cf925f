import type { Server } from 'node:http';

/*
 * The drain before a graceful stop: the instance keeps serving while readiness says 503, so a balancer
 * that polls it moves traffic away before the port closes; every answer meanwhile closes its connection,
 * so none is left kept alive to be cut when the port closes.
 */

const draining = new WeakSet<Server>();

/** From now on, `server`'s readiness answers 503 and each of its answers ends its connection. */
export function startDraining(server: Server): void {
  if (draining.has(server)) return;
  draining.add(server);
  // Added only now, so serving costs nothing until a drain; first, so the header is set before any handler writes.
  server.prependListener('request', (_request, response) => response.setHeader('connection', 'close'));
}

export const isDraining = (server: Server): boolean => draining.has(server);
