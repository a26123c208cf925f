import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { isolatedEnv, listen, svc } from './svc-runner.js';

/*
 * `svc migrate plan --key`, the client against a started server whose gateway recorded the
 * key's real v2 calls: the plan as JSON, a table, and Markdown that pastes as a ticket whose
 * checklist command mints the successor on the running server.
 */

describe.each(backends())('svc migrate plan --key against a started server [%s]', { timeout: 120_000 }, (backend) => {
  let t: TestApp;
  let url: string;
  let keyId: string;
  const env = isolatedEnv();
  const as = (apiKey: string) => ['--api-key', apiKey, '--api-url', url, '--allow-localhost'];
  const plan = (...args: string[]) => svc(['migrate', 'plan', '--key', keyId, ...args, ...as(t.demo.apiKeys.admin)], env);

  beforeAll(async () => {
    t = await startTestApp(backend);
    url = await listen(t);
    const legacy = await createLegacyKey(t.core, t.core.mappings, {
      companyId: t.demo.companies.acme,
      name: 'Address sync',
      scopes: ['api.employee.deliveryAddress.get', 'api.employees.getAll', 'api.catalogs.getAll'],
    });
    keyId = legacy.id;
    // Real v2 calls through the gateway: the address twice, the employee list once, catalogs (no successor) once.
    const call = async (path: string) => fetch(`${url}/v2${path}`, { headers: { 'x-api-key': legacy.rawKey! } });
    for (const path of [`/employees/${t.demo.employees.dana}/deliveryAddress`, `/employees/${t.demo.employees.dana}/deliveryAddress`, '/employees', '/catalogs']) await call(path);
  });
  afterAll(async () => t?.close());

  it('prints the plan as JSON, busiest endpoint first, with what stays on v2', async () => {
    const result = await plan('--format', 'json');
    expect(result.code, result.stderr).toBe(0);
    const data = JSON.parse(result.stdout).data;
    expect(data.endpoints.map((e: { endpoint: string; calls: number }) => [e.endpoint, e.calls])).toEqual([
      ['GET /v2/employees/:id/deliveryAddress', 2],
      ['GET /v2/employees', 1],
    ]);
    expect(data.staysOnV2).toEqual([expect.objectContaining({ endpoint: 'GET /v2/catalogs', calls: 1, reason: expect.any(String) })]);
    expect(data.capabilities.minimal).toEqual(['mcp:employees:read']);
    expect(data.cutover.stage).toBe('v2_only');
    // The operation table's own command reads the same plan.
    const generated = await svc(['legacy-keys', 'plan', keyId, '--format', 'json', ...as(t.demo.apiKeys.admin)], env);
    expect(generated.code, generated.stderr).toBe(0);
    expect({ ...JSON.parse(generated.stdout).data, generatedAt: data.generatedAt }).toEqual(data);
  });

  it('prints a table and a Markdown ticket whose mint command works on the running server', async () => {
    const table = await plan();
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`Migration plan of legacy key ${keyId} "Address sync"`);
    // Cells are cut at 36 columns, the endpoint's end included.
    expect(table.stdout).toMatch(/^GET \/v2\/employees\/:id\/deliveryAddre… +2 +GET \/v4\/employees\/:id/m);
    expect(table.stdout).toContain('[ ] Mint the successor v4 key');
    // --format text: the same report, nothing cut whatever the width, never coloured.
    const text = await svc(['migrate', 'plan', '--key', keyId, '--format', 'text', ...as(t.demo.apiKeys.admin)], { ...env, COLUMNS: '60' });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^GET \/v2\/employees\/:id\/deliveryAddress +2 +GET \/v4\/employees\/:id +mcp:/m);
    expect(text.stdout).not.toContain('…');

    const markdown = await plan('--format', 'markdown');
    expect(markdown.code, markdown.stderr).toBe(0);
    const ticket = markdown.stdout;
    expect(ticket.split('\n')[0]).toBe(`# Migrate "Address sync" (${keyId}) from API v2 to v4`);
    expect(ticket).toContain('### `GET /v2/employees/:id/deliveryAddress`: 2 call(s) → `GET /v4/employees/:id`');
    expect(ticket).toContain('- `GET /v2/catalogs` (1 call(s)): ');
    const mint = /^- \[ \] Mint the successor v4 key.*\n {2}```sh\n {2}(svc .*)\n {2}```$/m.exec(ticket)?.[1];
    expect(mint).toBe(`svc legacy-keys mint-successor ${keyId} --capabilities mcp:employees:read`);

    // The ticket's command, run as written, mints the successor; the plan then ticks the step.
    const minted = await svc([...mint!.split(' ').slice(1), '--format', 'json', ...as(t.demo.apiKeys.admin)], env);
    expect(minted.code, minted.stderr).toBe(0);
    expect(JSON.parse(minted.stdout).data.successor.apiKey).toMatch(/^svc_sk_/);
    const after = await plan('--format', 'markdown');
    expect(after.stdout).toMatch(/^- \[x\] Successor key svc_sk_\w+_… minted on/m);
    expect(after.stdout).toContain('Stage: successor_minted');
  });

  it('refuses without --key, an unknown format, a non-admin and an unknown key, with the right exit codes', async () => {
    const missing = await svc(['migrate', 'plan', ...as(t.demo.apiKeys.admin)], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--key <legacy key id> is required');
    expect(await plan('--format', 'markdwon')).toMatchObject({ code: 2, stderr: 'svc: error: --format markdwon: use one of table, json, text, markdown\n' });
    const manager = await keyWith(t, 'manager', ['mcp:employees:read', 'mcp:company:read']);
    const refused = await svc(['migrate', 'plan', '--key', keyId, ...as(manager)], env);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('admin_only');
    const unknown = await svc(['migrate', 'plan', '--key', 'lk_missing', ...as(t.demo.apiKeys.admin)], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Legacy key lk_missing was not found');
  });
});
