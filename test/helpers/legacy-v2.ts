import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '../../src/store/db.js';
import { sql } from '../../src/store/sql.js';
import { freePort, startListeningApp, type Backend, type ListeningTestApp } from './harness.js';

/*
 * A small legacy v2 API, written from the v2 contract (spec, "Contract changes in v4", and
 * shared/design/V2-CONTRACT.md) rather than from the gateway's maps: bare-array lists,
 * secondaryEmail, teamId and the deliveryAddress sub-resource. It reads the same company data as
 * the service, as the real legacy API does, in its own ways: lists newest first, its own key
 * order, timestamps in its own format. Tests plant differences, hang or fail it, and read what
 * it received.
 */

type Doc = Record<string, unknown>;

export interface ReceivedRequest {
  method: string;
  url: string;
  apiKey: string | undefined;
}

/** answer: as the contract says; hang: never answers; fail: 500. */
export type LegacyMode = 'answer' | 'hang' | 'fail';

interface EmployeeRow {
  id: string;
  company_id: string;
  display_name: string;
  email: string;
  personal_email: string | null;
  country: string | null;
  team_id: string | null;
  address_one: string | null;
  address_two: string | null;
  city: string | null;
  state: string | null;
  zip_code: string | null;
  phone: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

interface TeamRow {
  id: string;
  company_id: string;
  name: string;
  created_at: Date | string;
  updated_at: Date | string;
  employee_count: number;
}

/** v2 wrote seconds and an explicit offset. */
const v2Time = (value: Date | string) => new Date(value).toISOString().replace(/\.\d{3}Z$/, '+00:00');

function deliveryAddress(row: EmployeeRow): Doc {
  return {
    country: row.country,
    addressOne: row.address_one,
    addressTwo: row.address_two,
    city: row.city,
    state: row.state,
    zipCode: row.zip_code,
    phone: row.phone,
  };
}

function v2Employee(row: EmployeeRow): Doc {
  return {
    displayName: row.display_name,
    email: row.email,
    secondaryEmail: row.personal_email,
    teamId: row.team_id,
    country: row.country,
    deliveryAddress: deliveryAddress(row),
    companyId: row.company_id,
    createdAt: v2Time(row.created_at),
    updatedAt: v2Time(row.updated_at),
    id: row.id,
  };
}

function v2Team(row: TeamRow, withCount: boolean): Doc {
  return {
    name: row.name,
    companyId: row.company_id,
    ...(withCount ? { employeeCount: row.employee_count } : {}),
    createdAt: v2Time(row.created_at),
    updatedAt: v2Time(row.updated_at),
    id: row.id,
  };
}

const notFound = (what: string) => ({ status: 404, body: { error: { status: 404, code: 'not_found', message: `${what} not found` } } });

export class LegacyV2Server {
  readonly received: ReceivedRequest[] = [];
  mode: LegacyMode = 'answer';
  /** Applied to every answer before it is sent (the path without query, and the body): where a test plants a difference. */
  plant: (path: string, body: unknown) => unknown = (_path, body) => body;
  private readonly held = new Set<ServerResponse>();
  private server: Server | undefined;

  /** `keys`: each legacy key the API knows, and its company; `port` 0 takes any free one. */
  constructor(
    private readonly db: Db,
    private readonly keys: ReadonlyMap<string, string>,
    private port = 0,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Calls received but not answered (hang mode). */
  get pending(): number {
    return this.held.size;
  }

  /** Listens on loopback: on a new port, or on the port it had before `stop`. */
  async start(): Promise<void> {
    const server = createServer((request, response) => void this.serve(request, response));
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Goes down: held calls are cut, new ones refused. */
  async stop(): Promise<void> {
    for (const response of this.held) response.destroy();
    this.held.clear();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const apiKey = request.headers['x-api-key'];
    this.received.push({ method: request.method ?? '', url: request.url ?? '', apiKey: typeof apiKey === 'string' ? apiKey : undefined });
    if (this.mode === 'hang') {
      this.held.add(response);
      response.on('close', () => this.held.delete(response));
      return;
    }
    let answer: { status: number; body: unknown };
    const companyId = typeof apiKey === 'string' ? this.keys.get(apiKey) : undefined;
    const url = new URL(request.url ?? '/', this.url);
    if (this.mode === 'fail') answer = { status: 500, body: { error: { status: 500, code: 'internal_error', message: 'legacy failure' } } };
    else if (!companyId) answer = { status: 401, body: { error: { status: 401, code: 'invalid_api_key', message: 'unknown key' } } };
    else if (request.method !== 'GET') answer = { status: request.method === 'POST' ? 201 : 200, body: {} };
    else answer = await this.read(companyId, url);
    const body = answer.status < 300 ? this.plant(url.pathname, answer.body) : answer.body;
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async read(companyId: string, url: URL): Promise<{ status: number; body: unknown }> {
    const segments = url.pathname.split('/').filter(Boolean);
    const [resource, id, sub] = segments;
    if (resource === 'employees' && segments.length === 1) {
      const teamId = url.searchParams.get('teamId');
      const rows = await this.employees(companyId, undefined, teamId ?? undefined);
      return { status: 200, body: rows.map(v2Employee) };
    }
    if (resource === 'employees' && id && segments.length <= 3) {
      const [row] = await this.employees(companyId, id);
      if (!row) return notFound(`Employee ${id}`);
      if (sub === undefined) return { status: 200, body: v2Employee(row) };
      if (sub === 'deliveryAddress') return { status: 200, body: deliveryAddress(row) };
    }
    if (resource === 'teams' && segments.length <= 2) {
      const rows = await this.db.query<TeamRow>(sql`
        SELECT t.id, t.company_id, t.name, t.created_at, t.updated_at,
          (SELECT count(*)::int FROM employees e WHERE e.team_id = t.id) AS employee_count
        FROM teams t WHERE t.company_id = ${companyId} AND (${id ?? null}::text IS NULL OR t.id = ${id ?? null})
        ORDER BY t.created_at DESC, t.id DESC`);
      if (id === undefined) return { status: 200, body: rows.map((row) => v2Team(row, false)) };
      return rows[0] ? { status: 200, body: v2Team(rows[0], true) } : notFound(`Team ${id}`);
    }
    if (resource === 'catalogs' && segments.length === 1) return { status: 200, body: [] };
    return notFound(url.pathname);
  }

  private employees(companyId: string, id?: string, teamId?: string): Promise<EmployeeRow[]> {
    return this.db.query<EmployeeRow>(sql`
      SELECT id, company_id, display_name, email, personal_email, country, team_id,
        address_one, address_two, city, state, zip_code, phone, created_at, updated_at
      FROM employees
      WHERE company_id = ${companyId} AND (${id ?? null}::text IS NULL OR id = ${id ?? null})
        AND (${teamId ?? null}::text IS NULL OR team_id = ${teamId ?? null})
      ORDER BY created_at DESC, id DESC`);
  }
}

/**
 * A listening service whose shadow check samples every v2 GET (one legacy call at a time), and its
 * legacy v2 API on loopback; `keys` takes each legacy key the legacy API is to know, with its company.
 */
export async function startShadowedApp(backend: Backend, now: Date): Promise<{ t: ListeningTestApp; legacy: LegacyV2Server; keys: Map<string, string> }> {
  const legacyPort = await freePort();
  const t = await startListeningApp(backend, {
    config: { legacyV2Upstream: `http://127.0.0.1:${legacyPort}`, shadowSampleRate: 1, shadowTimeoutMs: 3000, shadowMaxInFlight: 1 },
    core: { now: () => now },
  });
  const keys = new Map<string, string>();
  const legacy = new LegacyV2Server(t.core.db, keys, legacyPort);
  await legacy.start();
  return { t, legacy, keys };
}
