import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSessionId, sharedSessionStore, type McpSession } from '../../src/mcp/sessions.js';
import { openSharedState, type SharedState } from '../../src/shared-state/index.js';
import { dropKeys, redisUrl, sharedStateKinds, uniquePrefix } from '../shared-state/redis-support.js';

/* The session store over each shared state: a request reads the session as created, and only while it lives. */
const prefix = uniquePrefix();

afterAll(async () => {
  if (redisUrl()) await dropKeys(redisUrl(), prefix);
});

describe.each(sharedStateKinds())('MCP sessions over shared state: %s', (kind) => {
  let state: SharedState;
  beforeAll(async () => {
    state = await openSharedState({ redisUrl: kind === 'redis' ? redisUrl() : undefined, redisKeyPrefix: prefix }, pino({ level: 'silent' }), new Registry());
  });
  afterAll(() => state.close());

  const session = (): McpSession => ({
    id: newSessionId(),
    boundTo: 'usr_1|api_key:key_1',
    protocolVersion: '2025-11-25',
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'test', version: '1.0.0' },
    createdAt: 1,
  });

  it('reads each session as created, read-only, until it is deleted', async () => {
    const sessions = sharedSessionStore(state);
    const [one, two] = [session(), session()];
    await sessions.create(one);
    await sessions.create(two);
    const read = await sessions.get(one.id);
    expect(read).toEqual(one);
    expect(await sessions.get(two.id)).toEqual(two);
    // A read is shared with the session's next requests, so nothing may change it.
    expect(() => ((read!.clientCapabilities.elicitation as Record<string, unknown>).url = {})).toThrow(TypeError);
    expect(await sessions.get(one.id)).toEqual(one);
    await sessions.delete(one.id);
    expect(await sessions.get(one.id)).toBeUndefined();
    expect(await sessions.get(two.id)).toEqual(two);
  });

  it('reads a large session record (not kept parsed) as created too', async () => {
    const sessions = sharedSessionStore(state);
    const large = { ...session(), clientInfo: { name: 'x'.repeat(10_000), version: '1.0.0' } };
    await sessions.create(large);
    expect(await sessions.get(large.id)).toEqual(large);
    expect(await sessions.get(large.id)).toEqual(large);
  });

  it('restarts a session\'s idle clock on every read, so a session in use outlives its idle time', async () => {
    // Idle 2 s, a read every second: alive at 3 s only if each read restarted the clock (a second of slack a step).
    const sessions = sharedSessionStore(state, 2);
    const one = session();
    await sessions.create(one);
    for (let read = 0; read < 3; read++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await sessions.get(one.id)).toEqual(one);
    }
  });

  it('forgets a session left idle past its time', async () => {
    const sessions = sharedSessionStore(state, 1);
    const one = session();
    await sessions.create(one);
    expect(await sessions.get(one.id)).toEqual(one);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect(await sessions.get(one.id)).toBeUndefined();
  });
});
