import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataDir, runCommand, ServerProcess } from '../helpers/server-process.js';

/*
 * The embedded store is locked by the running server (PGlite is single-process), so
 * `svc-server keys mint` cannot reach it; the successor of a legacy key is minted over HTTP
 * instead, and works at once: no restart.
 */

interface DemoKeys {
  apiKeys: { admin: string };
  legacyKeys: { addressOnly: string };
}

describe('a successor key minted on a running embedded server [pglite]', () => {
  let dataDir: string;
  let server: ServerProcess;
  let url: string;
  let demo: DemoKeys;

  beforeAll(async () => {
    dataDir = freshDataDir();
    server = await ServerProcess.start(['--demo', '--data-dir', dataDir], { LOG_LEVEL: 'warn', DATABASE_URL: '', SVC_SECRET_KEY: '' });
    url = server.summary.url;
    demo = JSON.parse(readFileSync(join(dataDir, 'demo-keys.json'), 'utf8')) as DemoKeys;
  }, 120_000);
  afterAll(async () => {
    await server?.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (path: string, key: string, body?: object) => {
    const response = await fetch(`${url}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json()) as { data: any; error?: { code: string } } };
  };

  it('mints over HTTP while the operator command is locked out, and the key works on the next request', async () => {
    await expect(runCommand(['keys', 'mint', '--data-dir', dataDir, '--user', 'admin@demo.example', '--capabilities', 'all'])).rejects.toThrow(/in use by process/);

    const { keys } = (await call('/v4/admin/legacy-keys', demo.apiKeys.admin)).body.data as { keys: Array<{ id: string; name: string; cutover: { stage: string } }> };
    const addressSync = keys.find((key) => key.name === 'Demo v2 address sync')!;
    expect(addressSync.cutover.stage).toBe('v2_only');

    // Its 30-day demo history calls the address read only: the least successor reads employees.
    const minted = await call(`/v4/admin/legacy-keys/${addressSync.id}/successor`, demo.apiKeys.admin, {});
    expect(minted.status).toBe(201);
    expect(minted.body.data.successor.capabilities).toEqual(['mcp:employees:read']);

    const me = await call('/v4/me', minted.body.data.successor.apiKey);
    expect(me.status).toBe(200);
    expect(me.body.data.user.email).toBe(`v4-successor+${addressSync.id}@co-acme.invalid`);
    const stage = async () => (await call(`/v4/admin/legacy-keys/${addressSync.id}`, demo.apiKeys.admin)).body.data.key.cutover.stage as string;
    // Authenticated, but not yet working: it has not read an employee, as the v2 calls do.
    expect(await stage()).toBe('successor_minted');
    const [employee] = (await call('/v4/employees?limit=1', minted.body.data.successor.apiKey)).body.data.employees as Array<{ id: string }>;
    expect(await stage()).toBe('successor_working');
    // The legacy key itself still answers on v2 until it is disabled.
    const v2 = await fetch(`${url}/v2/employees/${employee!.id}/deliveryAddress`, { headers: { 'x-api-key': demo.legacyKeys.addressOnly } });
    expect(v2.status).toBe(200);
  });
});
