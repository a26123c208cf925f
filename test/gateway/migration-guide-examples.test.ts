import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createLegacyKey, resolveLegacyKey } from '../../src/legacy/legacy-keys.js';
import type { GuideEndpoint, MigrationGuide } from '../../src/migration/migration-guide.js';
import { sql } from '../../src/store/sql.js';
import { backends, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

/*
 * The guide's examples are runnable: every v2 curl line of the served guide runs against one
 * service with a legacy key, every v4 block against another with that key's v4 successor (a create
 * cannot run twice on one database), each in bash with the real curl and jq, failing on any HTTP error.
 */

interface Side {
  app: ListeningTestApp;
  v2Key: string;
  v4Key: string;
}

async function startSide(backend: Parameters<typeof startListeningApp>[0]): Promise<Side> {
  const app = await startListeningApp(backend);
  const created = await createLegacyKey(app.core, app.core.mappings, {
    companyId: app.demo.companies.acme,
    name: 'guide examples',
    scopes: app.core.mappings.scopes.map((s) => s.name),
  });
  const resolved = await resolveLegacyKey(app.core, created.rawKey!);
  if (resolved.status !== 'active' || !resolved.bridgeApiKey) throw new Error('expected a bridged key');
  return { app, v2Key: created.rawKey!, v4Key: resolved.bridgeApiKey };
}

/** Ids of the demo data fitting each example, as an integration owner would pick them from theirs. */
async function variablesFor(side: Side, endpoint: GuideEndpoint): Promise<Record<string, string>> {
  const { employees, teams, devices } = side.app.demo;
  const [item] = await side.app.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = 'MX Keys S'`);
  const picks: Record<string, Record<string, string>> = {
    'GET /v2/employees': { TEAM_ID: teams.engineering },
    'GET /v2/employees/:id': { EMPLOYEE_ID: employees.eve },
    'POST /v2/employees': { TEAM_ID: teams.engineering },
    'PATCH /v2/employees/:id': { EMPLOYEE_ID: employees.dana, TEAM_ID: teams.sales },
    'GET /v2/employees/:id/deliveryAddress': { EMPLOYEE_ID: employees.eve },
    'POST /v2/employees/:id/deliveryAddress': { EMPLOYEE_ID: employees.sofia },
    'PATCH /v2/employees/:id/deliveryAddress': { EMPLOYEE_ID: employees.hans },
    'POST /v2/employees/:id/offboarding': { EMPLOYEE_ID: employees.hans, DEVICE_ID: devices.hansDesktop! },
    'GET /v2/employees/:id/products': { EMPLOYEE_ID: employees.eve },
    'POST /v2/employees/products/productInUse': { EMPLOYEE_ID: employees.eve },
    'GET /v2/teams/:teamId': { TEAM_ID: teams.engineering },
    'PATCH /v2/teams/:teamId': { TEAM_ID: teams.operations },
    'POST /v2/orders/assignToEmployee': { EMPLOYEE_ID: employees.dana, DEVICE_ID: devices.stockLaptopDe1! },
    'POST /v2/orders/offboarding': { EMPLOYEE_ID: employees.erik, DEVICE_ID: devices.erikLaptop! },
    'POST /v2/orders/collection': { EMPLOYEE_ID: employees.eve, DEVICE_ID: devices.evePhone! },
    'POST /v2/orders/swap': { EMPLOYEE_ID: employees.eve, RETURNED_DEVICE_ID: devices.eveLaptop!, REPLACEMENT_DEVICE_ID: devices.stockLaptopUs1! },
    'POST /v2/orders/purchaseOrder': { ITEM_ID: item!.id },
    'GET /v2/products/:productId': { DEVICE_ID: devices.stockTablet! },
    'POST /v2/products/addPinCode': { DEVICE_ID: devices.stockTablet! },
  };
  const chosen = picks[`${endpoint.method} ${endpoint.path}`] ?? {};
  expect(Object.keys(chosen).sort(), `the ids ${endpoint.method} ${endpoint.path} needs`).toEqual([...endpoint.example!.variables].sort());
  return chosen;
}

/**
 * Runs curl lines as a reader pastes them, with every HTTP error fatal; stdout is the last answer.
 * Asynchronously: the services answering are in this process.
 */
function runInBash(lines: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }', ...lines].join('\n');
  // stdin not a socket and --norc: Debian's bash would read ~/.bashrc, taking a socket for sshd.
  const child = spawn('bash', ['--norc', '--noprofile', '-c', script], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe.skipIf(!inject('curlAndJq')).each(backends())('the migration guide’s examples run as written [%s]', (backend) => {
  let v2Side: Side;
  let v4Side: Side;
  let endpoints: GuideEndpoint[];

  beforeAll(async () => {
    [v2Side, v4Side] = await Promise.all([startSide(backend), startSide(backend)]);
    // The guide as the service serves it.
    const res = await fetch(`${v2Side.app.baseUrl}/docs/migration.json`);
    endpoints = ((await res.json()) as MigrationGuide).endpoints.filter((e) => e.example && e.example.v4.length > 0);
  });
  afterAll(async () => {
    await Promise.all([v2Side?.app.close(), v4Side?.app.close()]);
  });

  it('covers every v2 endpoint with a v4 successor', () => {
    const withSuccessor = v2Side.app.core.mappings.routes.filter((r) => r.kind === 'v4').length;
    expect(endpoints).toHaveLength(withSuccessor);
  });

  it('runs each example pair, in the order of the guide, v2 and v4 alike answering success', async () => {
    for (const endpoint of endpoints) {
      const where = `${endpoint.method} ${endpoint.path}`;
      const v2 = await runInBash([endpoint.example!.v2.curl], { BASE_URL: v2Side.app.baseUrl, V2_KEY: v2Side.v2Key, ...(await variablesFor(v2Side, endpoint)) });
      expect(v2.status, `${where} on v2: ${v2.stderr} ${v2.stdout}`).toBe(0);
      const v4 = await runInBash(endpoint.example!.v4.map((call) => call.curl), { BASE_URL: v4Side.app.baseUrl, V4_KEY: v4Side.v4Key, ...(await variablesFor(v4Side, endpoint)) });
      expect(v4.status, `${where} on v4: ${v4.stderr} ${v4.stdout}`).toBe(0);
      expect(JSON.parse(v4.stdout), where).toMatchObject({ ok: true });
    }
  });
});
