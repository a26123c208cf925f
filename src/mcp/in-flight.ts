import type { FastifyReply } from 'fastify';
import { Gauge, type Registry } from 'prom-client';

/*
 * How many MCP requests one credential has in flight on this instance, checked once the request is
 * authenticated and before its body is read and parsed: one key flooding /mcp with large bodies
 * would otherwise hold the event loop for every other caller (bench/mcp-flood.ts).
 */

const IN_FLIGHT = 'svc_mcp_requests_in_flight';

/** Gives the place back; only the first call counts. */
export type Release = () => void;

interface InFlightLimit {
  /** Takes a place for `who` (a principal binding), given back when the response closes; undefined when none is left. */
  enter(who: string, reply: FastifyReply): Release | undefined;
}

export function inFlightLimit(registry: Registry, limit: number): InFlightLimit {
  const counts = new Map<string, number>();
  // One core may serve several apps (tests): the gauge is registered once per registry.
  const gauge =
    (registry.getSingleMetric(IN_FLIGHT) as Gauge | undefined) ??
    new Gauge({ name: IN_FLIGHT, help: 'MCP requests holding a place, from their authentication to their response', registers: [registry] });
  return {
    enter(who, reply) {
      const held = counts.get(who) ?? 0;
      if (held >= limit) return undefined;
      counts.set(who, held + 1);
      gauge.inc();
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const left = (counts.get(who) ?? 1) - 1;
        if (left > 0) counts.set(who, left);
        else counts.delete(who);
        gauge.dec();
      };
      // 'close' follows a finished response and a connection lost alike, hijacked streams included. A
      // client gone while the request was authenticated closed it already: the place is given back now.
      if (reply.raw.closed) release();
      else reply.raw.once('close', release);
      return release;
    },
  };
}
