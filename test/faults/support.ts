import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { loadConfig } from '../../src/kit/config.js';
import { createCore, type Core } from '../../src/app/core.js';
import { raw, sql } from '../../src/store/sql.js';

/*
 * Write load for the fault tests: teams, employees and orders with unique names (an order's device is
 * its own), each with an Idempotency-Key, every 2xx acknowledgement recorded, so that after the fault
 * each one can be looked for and each failed one retried.
 */

export type WriteKind = 'team' | 'employee' | 'order';

/** A write as sent, with its Idempotency-Key, so that it can be sent again. */
export interface SentWrite {
  path: string;
  key: string;
  body: unknown;
}

export interface WriteLog {
  acknowledged: Array<{ kind: WriteKind; id: string }>;
  /** Every non-2xx answer (or network failure: status 0) with its code and whether it said when to retry. */
  refused: Array<{ kind: WriteKind; status: number; code?: string; retryAfter: string | null; write: SentWrite }>;
}

async function post<T>(url: string, apiKey: string, body: unknown): Promise<T> {
  const response = await fetch(url, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { data: T }).data;
}

/** Stock devices in Germany for `count` Deployment orders, one each, registered through the API. */
export async function stockDevices(baseUrl: string, apiKey: string, companyId: string, count: number): Promise<string[]> {
  const batch = randomBytes(3).toString('hex');
  const ids: string[] = [];
  for (let first = 0; first < count; first += 500) {
    const products = Array.from({ length: Math.min(500, count - first) }, (_, i) => ({
      serialNumber: `FAULT-${batch}-${first + i}`,
      productType: 'Laptops',
      manufacturer: 'Lenovo',
      model: 'ThinkPad T14',
      country: 'DE',
    }));
    const data = await post<{ products: Array<{ id: string }> }>(`${baseUrl}/v4/products`, apiKey, { companyId, products });
    ids.push(...data.products.map((p) => p.id));
  }
  return ids;
}

/** The id of the demo's Dana (an Acme employee in Germany), as any API client would find it. */
export async function danaOf(baseUrl: string, apiKey: string): Promise<string> {
  const response = await fetch(`${baseUrl}/v4/employees?query=dana`, { headers: { 'x-api-key': apiKey } });
  const body = (await response.json()) as { data: { employees: Array<{ id: string; country: string }> } };
  const dana = body.data.employees.find((e) => e.country === 'DE');
  if (!dana) throw new Error(`no Dana in Germany: ${JSON.stringify(body)}`);
  return dana.id;
}

/**
 * `concurrency` loops POSTing teams, employees and orders (in turn) to `baseUrl` until `stop()`
 * resolves; each body is unique, so a write is never refused as a duplicate.
 */
/** POSTs `write` with its Idempotency-Key. */
export function sendWrite(baseUrl: string, apiKey: string, write: SentWrite): Promise<Response> {
  return fetch(`${baseUrl}${write.path}`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'idempotency-key': write.key },
    body: JSON.stringify(write.body),
  });
}

export async function driveWrites(
  baseUrl: string,
  options: { apiKey: string; companyId: string; employeeId: string; devices: string[]; concurrency: number; until: Promise<unknown>; log?: WriteLog },
): Promise<WriteLog> {
  // The caller's log, when it watches the writes as they are answered.
  const log: WriteLog = options.log ?? { acknowledged: [], refused: [] };
  const run = randomBytes(3).toString('hex');
  let stopped = false;
  void options.until.then(() => (stopped = true));
  let n = 0;
  const bodyOf = (kind: WriteKind, i: number): unknown => {
    if (kind === 'team') return { companyId: options.companyId, name: `Fault team ${run} ${i}` };
    if (kind === 'employee') return { companyId: options.companyId, displayName: `Fault Employee ${i}`, email: `fault-${run}-${i}@acme.example` };
    const device = options.devices.pop();
    if (!device) throw new Error('the fault test ran out of devices');
    return { orderType: 'Deployment', employeeId: options.employeeId, productIds: [device] };
  };
  const paths: Record<WriteKind, string> = { team: '/v4/teams', employee: '/v4/employees', order: '/v4/orders' };
  const kinds: WriteKind[] = ['team', 'employee', 'order'];
  const loop = async () => {
    while (!stopped) {
      const i = n++;
      const kind = kinds[i % kinds.length]!;
      const write = { path: paths[kind], key: `${run}-${i}`, body: bodyOf(kind, i) };
      try {
        const response = await sendWrite(baseUrl, options.apiKey, write);
        const body = (await response.json()) as { data?: { id?: string }; error?: { code?: string } };
        if (response.ok && body.data?.id) log.acknowledged.push({ kind, id: body.data.id });
        else log.refused.push({ kind, status: response.status, code: body.error?.code, retryAfter: response.headers.get('retry-after'), write });
      } catch {
        log.refused.push({ kind, status: 0, retryAfter: null, write });
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  return log;
}

/** The acknowledged writes missing from the store, and rows half-written (an order without its created event or its devices). */
export async function auditWrites(core: Core, log: WriteLog) {
  const ids = (kind: WriteKind) => log.acknowledged.filter((w) => w.kind === kind).map((w) => w.id);
  const present = async (table: 'teams' | 'employees' | 'orders', wanted: string[]) =>
    new Set((await core.db.query<{ id: string }>(sql`SELECT id FROM ${raw(table)} WHERE id = ANY(${wanted})`)).map((r) => r.id));
  const missing: string[] = [];
  for (const [kind, table] of [['team', 'teams'], ['employee', 'employees'], ['order', 'orders']] as const) {
    const found = await present(table, ids(kind));
    missing.push(...ids(kind).filter((id) => !found.has(id)));
  }
  const halfWritten = await core.db.query<{ id: string; problem: string }>(sql`
    SELECT o.id, 'order without its created event' AS problem FROM orders o
      WHERE NOT EXISTS (SELECT 1 FROM order_events e WHERE e.order_id = o.id AND e.type = 'created')
    UNION ALL
    SELECT o.id, 'order without devices' AS problem FROM orders o
      WHERE o.order_type = 'Deployment' AND NOT EXISTS (SELECT 1 FROM order_devices d WHERE d.order_id = o.id)
    UNION ALL
    SELECT h.device_id, 'device held by a missing order' AS problem FROM device_holds h
      WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = h.order_id)
    UNION ALL
    SELECT e.id, 'employee without its company' AS problem FROM employees e
      WHERE NOT EXISTS (SELECT 1 FROM companies c WHERE c.id = e.company_id)`);
  return { missing, halfWritten };
}

/** The acknowledged writes that the API at `baseUrl` does not answer 200 for, with the status it gave. */
export async function unreadableWrites(baseUrl: string, apiKey: string, log: WriteLog): Promise<string[]> {
  const unreadable: string[] = [];
  for (const { kind, id } of log.acknowledged) {
    const path = { team: 'teams', employee: 'employees', order: 'orders' }[kind];
    const response = await fetch(`${baseUrl}/v4/${path}/${id}`, { headers: { 'x-api-key': apiKey } });
    if (response.status !== 200) unreadable.push(`${kind} ${id}: ${response.status}`);
  }
  return unreadable;
}

/** auditWrites on the store itself, opened as a fresh core once the server is gone. */
export async function auditStore(store: { dataDir?: string; databaseUrl?: string; secretKey: string }, log: WriteLog) {
  const config = loadConfig({}, { dataDir: store.dataDir ?? 'memory://', databaseUrl: store.databaseUrl, secretKey: store.secretKey, logLevel: 'silent' });
  const core = await createCore(config, { logger: pino({ level: 'silent' }) });
  try {
    return await auditWrites(core, log);
  } finally {
    await core.close();
  }
}
