import type { Capability } from '../../src/access/capabilities.js';
import { mintKeyForUser } from '../../src/domain/admin.js';
import type { TestApp } from './harness.js';

/** Mints a key for one of the demo users with exactly the given capabilities. */
export async function keyWith(t: TestApp, who: 'admin' | 'manager' | 'employee', capabilities: Capability[]): Promise<string> {
  return (await mintKeyForUser(t.core.db, t.demo.emails[who], capabilities, `test ${who}`)).rawKey;
}
