import type { V4Client } from '../../src/gateway/v4-client.js';

/** One v4 call of the gateway: the operation and its input. The key is left out on purpose. */
export interface RecordedV4Call {
  operation: string;
  input: Record<string, unknown>;
}

/**
 * Records every v4 call the gateway makes, in order, and passes each on unchanged to the real
 * client (in-process or HTTP), so a test sees the exact translation without replacing the core.
 */
export function v4Recorder() {
  let calls: RecordedV4Call[] = [];
  return {
    wrap(client: V4Client): V4Client {
      return {
        call(operation, input, apiKey) {
          // A copy: the gateway may reuse the object, and the record must show what was sent.
          calls.push({ operation, input: structuredClone(input) });
          return client.call(operation, input, apiKey);
        },
      };
    },
    /** The calls recorded since the last take; the record starts afresh. */
    take(): RecordedV4Call[] {
      const taken = calls;
      calls = [];
      return taken;
    },
  };
}
