import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/store/sql.js';
import { backends, client, startListeningApp, type ListeningTestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';
import { connect, data, textJson, type Connected } from './support/mcp.js';

/** The spec's MCP tool tables, verbatim: 18 read-only (whoami included) and 9 write tools. */
const SPEC_READ_TOOLS = [
  'whoami', 'list_orders', 'get_order', 'get_order_history', 'get_order_sla', 'validate_order_constraints', 'get_tracking',
  'list_employees', 'get_employee', 'list_available_countries', 'list_teams', 'get_team', 'search_inventory',
  'get_assigned_devices', 'get_product', 'get_device_options', 'suggest_alternative_device', 'list_company_addresses',
];
const SPEC_WRITE_TOOLS = [
  'create_order', 'create_purchase_order', 'add_power_accessory', 'create_employee', 'update_employee', 'create_team',
  'update_team', 'add_product_pin_code', 'create_company_address',
];

const approve = () => ({ action: 'accept' as const, content: { approve: true } });

describe.each(backends())('MCP tools over the SDK client [%s]', (backend) => {
  let s: ListeningTestApp;
  let admin: Connected;
  beforeAll(async () => {
    s = await startListeningApp(backend);
    admin = await connect(s.mcpUrl, s.demo.apiKeys.admin, { elicit: approve });
  });
  afterAll(async () => {
    await admin.close();
    await s.close();
  });

  const call = (c: Connected, name: string, args: Record<string, unknown> = {}) => c.client.callTool({ name, arguments: args });
  const device = (key: string) => s.demo.devices[key]!;
  async function catalogItem(name: string): Promise<string> {
    const [row] = await s.core.db.query<{ id: string }>(sql`SELECT id FROM catalog_items WHERE name = ${name}`);
    return row!.id;
  }

  it('initializes at the newest protocol version with the service identity', () => {
    expect(admin.client.getServerVersion()).toMatchObject({ name: 'device-lifecycle-service' });
    expect(admin.client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    expect(admin.transport.protocolVersion).toBe('2025-11-25');
    expect(admin.transport.sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  describe('tools/list', () => {
    let tools: Tool[];
    beforeAll(async () => {
      tools = (await admin.client.listTools()).tools;
    });

    it('lists exactly the spec tools: 18 read-only and 9 writes, no extension operation', () => {
      expect(tools.map((t) => t.name).sort()).toEqual([...SPEC_READ_TOOLS, ...SPEC_WRITE_TOOLS].sort());
      expect(tools.filter((t) => t.annotations?.readOnlyHint === true).map((t) => t.name).sort()).toEqual([...SPEC_READ_TOOLS].sort());
      for (const tool of tools.filter((t) => SPEC_WRITE_TOOLS.includes(t.name))) {
        expect(tool.annotations, tool.name).toMatchObject({ readOnlyHint: false, destructiveHint: expect.any(Boolean), idempotentHint: expect.any(Boolean) });
      }
    });

    // OpenAI's app review refuses tools whose hints are left to the client's defaults (destructive, open world).
    it('states all four hints on every tool; reads destroy nothing and only tracking reaches the outside world', () => {
      for (const tool of tools) {
        const hints = tool.annotations ?? {};
        for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
          expect(typeof hints[hint], `${tool.name} ${hint}`).toBe('boolean');
        }
        if (hints.readOnlyHint) expect(hints, tool.name).toMatchObject({ destructiveHint: false, idempotentHint: true });
      }
      expect(tools.filter((t) => t.annotations?.openWorldHint).map((t) => t.name)).toEqual(['get_tracking']);
    });

    // One file per tool, the same on every backend: a change to a tool's contract shows up in review.
    it.each([...SPEC_READ_TOOLS, ...SPEC_WRITE_TOOLS])('pins %s: title, description, annotations and schemas', async (name) => {
      const tool = tools.find((t) => t.name === name)!;
      expect(tool.title).toBeTruthy();
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      // The icon's origin is this run's port: pinned relative to it.
      const pinned = { ...tool, icons: tool.icons?.map((i) => ({ ...i, src: i.src.replace(s.baseUrl, '{base}') })) };
      await expect(`${JSON.stringify(pinned, null, 2)}\n`).toMatchFileSnapshot(`__snapshots__/tools/${name}.json`);
    });

    it('gives every tool and the server a PNG icon from this origin, loadable without a credential', async () => {
      const sources = new Set(tools.flatMap((t) => (t.icons ?? []).map((i) => i.src)));
      const serverIcons = admin.client.getServerVersion()?.icons ?? [];
      expect(tools.every((t) => t.icons?.length === 1 && t.icons[0]!.mimeType === 'image/png')).toBe(true);
      expect(tools.find((t) => t.name === 'create_order')!.icons![0]!.src).toBe(`${s.baseUrl}/icons/orders.png`);
      expect(tools.find((t) => t.name === 'whoami')!.icons![0]!.src).toBe(`${s.baseUrl}/icons/identity.png`);
      expect(serverIcons).toEqual([{ src: `${s.baseUrl}/icons/server.png`, mimeType: 'image/png', sizes: ['48x48'] }]);
      for (const src of [...sources, serverIcons[0]!.src]) {
        const response = await fetch(src);
        expect(response.status, src).toBe(200);
        expect(response.headers.get('content-type')).toBe('image/png');
        // The PNG signature, and a 48×48 header.
        const png = Buffer.from(await response.arrayBuffer());
        expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
        expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([48, 48]);
      }
      expect((await fetch(`${s.baseUrl}/icons/nope.png`)).status).toBe(404);
    });

    it('marks, without hiding, the tools a credential cannot call', async () => {
      const limited = await connect(s.mcpUrl, await keyWith(s, 'admin', ['mcp:teams:read']));
      const listed = (await limited.client.listTools()).tools;
      expect(listed).toHaveLength(27);
      const byName = new Map(listed.map((t) => [t.name, t]));
      expect(byName.get('list_teams')!._meta).toEqual({ 'svc/capability': 'mcp:teams:read', 'svc/available': true });
      expect(byName.get('whoami')!._meta).toEqual({ 'svc/capability': null, 'svc/available': true });
      expect(byName.get('create_team')!._meta).toEqual({ 'svc/capability': 'mcp:teams:write', 'svc/available': false });
      expect(byName.get('create_team')!.description).toMatch(/Unavailable to this credential: it lacks mcp:teams:write\.$/);
      expect(byName.get('list_teams')!.description).not.toMatch(/Unavailable/);
      await limited.close();
    });
  });

  it('calls every tool on its happy path, answering structuredContent plus the same JSON as text', async () => {
    const called = new Set<string>();
    const ok = async (name: string, args: Record<string, unknown> = {}) => {
      const result = await call(admin, name, args);
      called.add(name);
      const structured = data(result);
      expect(textJson(result), name).toEqual(structured);
      return structured;
    };
    const { acme } = s.demo.companies;
    const { eve, dana, erik } = s.demo.employees;

    expect((await ok('whoami')).user).toMatchObject({ email: 'admin@demo.example', role: 'admin' });
    // Orders: validate, create, then every read of the new order.
    const deployment = { orderType: 'Deployment', employeeId: dana, productIds: [device('stockLaptopDe1'), device('stockTablet')] };
    expect(await ok('validate_order_constraints', deployment)).toMatchObject({ valid: true });
    const order = await ok('create_order', deployment);
    expect(order).toMatchObject({ orderType: 'Deployment', status: 'Pending', employeeId: dana });
    expect((await ok('get_order', { id: order.id })).id).toBe(order.id);
    expect((await ok('list_orders', { status: 'Pending' })).orders.map((o: { id: string }) => o.id)).toContain(order.id);
    expect(await ok('get_order_history', { id: order.id })).toBeTruthy();
    expect(await ok('get_order_sla', { id: order.id })).toBeTruthy();
    expect(await ok('get_tracking', { id: order.id })).toBeTruthy();
    const accessory = await ok('add_power_accessory', { id: order.id, productId: device('stockTablet') });
    expect(accessory.subOrders).toHaveLength(1);
    const purchase = await ok('create_purchase_order', {
      orderType: 'Purchase for Employee',
      employeeId: dana,
      items: [{ itemId: await catalogItem('ThinkPad X1 Carbon Gen 12'), quantity: 1, country: 'DE' }],
    });
    expect(purchase).toMatchObject({ orderType: 'Purchase for Employee', status: 'Pending' });
    // Employees.
    expect((await ok('list_employees')).totalCount).toBeGreaterThan(0);
    expect(await ok('get_employee', { id: eve })).toMatchObject({ id: eve, city: 'San Francisco' });
    expect((await ok('list_available_countries')).countries).toContain('DE');
    const hired = await ok('create_employee', { displayName: 'Mia MCP', email: 'mia.mcp@acme.example', country: 'DE', companyId: acme });
    expect(await ok('update_employee', { id: hired.id, jobTitle: 'Agent Wrangler' })).toMatchObject({ jobTitle: 'Agent Wrangler' });
    expect((await ok('get_assigned_devices', { id: erik })).devices.map((d: { id: string }) => d.id)).toContain(device('erikLaptop'));
    // Teams.
    expect((await ok('list_teams')).totalCount).toBe(5);
    expect(await ok('get_team', { id: s.demo.teams.engineering })).toMatchObject({ name: 'Engineering' });
    const team = await ok('create_team', { name: 'MCP Agents', companyId: acme });
    expect(await ok('update_team', { id: team.id, name: 'MCP Agents II' })).toMatchObject({ name: 'MCP Agents II' });
    // Inventory.
    expect((await ok('search_inventory', { query: 'ThinkPad' })).devices.length).toBeGreaterThan(0);
    expect(await ok('get_product', { id: device('erikLaptop') })).toMatchObject({ id: device('erikLaptop') });
    expect((await ok('get_device_options', { productType: 'Laptops' })).options.length).toBeGreaterThan(0);
    expect((await ok('suggest_alternative_device', { country: 'DE' })).suggestions.length).toBeGreaterThan(0);
    expect(await ok('add_product_pin_code', { productId: device('erikLaptop'), pinCode: '80417263' })).toMatchObject({ pinCodeSet: true });
    // Company addresses.
    expect((await ok('list_company_addresses')).totalCount).toBeGreaterThan(0);
    const address = await ok('create_company_address', {
      alias: 'MCP Depot', address: 'Hafenstraße 1', city: 'Hamburg', zipCode: '20457', country: 'DE',
      contactName: 'Lea Lager', contactEmail: 'depot@acme.example', phone: '+49 40 5550 100', companyId: acme,
    });
    expect(address).toMatchObject({ alias: 'MCP Depot' });

    expect([...called].sort()).toEqual([...SPEC_READ_TOOLS, ...SPEC_WRITE_TOOLS].sort());
    // Every write asked for approval once, showing what it would do; the PIN itself stays masked.
    expect(admin.elicitations.map((e) => e.params.message.match(/\((\w+)\)\?/)?.[1]).sort()).toEqual([...SPEC_WRITE_TOOLS].sort());
    const pinPrompt = admin.elicitations.find((e) => e.params.message.includes('add_product_pin_code'))!;
    expect(pinPrompt.params.message).not.toContain('80417263');
  });

  it('fails a tool with the code and message REST answers', async () => {
    const rest = await client(s.app, s.demo.apiKeys.admin).get('/v4/employees/emp_missing');
    const result = await call(admin, 'get_employee', { id: 'emp_missing' });
    expect(result.isError).toBe(true);
    expect(textJson(result).error).toEqual({ code: rest.body.error.code, message: rest.body.error.message });

    const invalid = await call(admin, 'create_team', { name: '' });
    const restInvalid = await client(s.app, s.demo.apiKeys.admin).post('/v4/teams', { name: '' });
    expect(textJson(invalid).error).toEqual(restInvalid.body.error);
  });

  it('refuses an unknown tool as a protocol error', async () => {
    await expect(call(admin, 'delete_everything')).rejects.toThrow(/Unknown tool: delete_everything/);
  });

  it('applies manager scoping exactly as REST does', async () => {
    const manager = await connect(s.mcpUrl, s.demo.apiKeys.manager);
    const viaMcp = data(await call(manager, 'list_teams'));
    const viaRest = (await client(s.app, s.demo.apiKeys.manager).get('/v4/teams')).body.data;
    expect(viaMcp.teams.map((t: { name: string }) => t.name)).toEqual(['Engineering']);
    expect(viaMcp).toEqual(viaRest);
    const foreign = await call(manager, 'get_employee', { id: s.demo.employees.greta });
    expect(foreign.isError).toBe(true);
    await manager.close();
  });

  describe('capability denials', () => {
    it('answers a tool without its capability with an isError result naming the capability; whoami always works', async () => {
      const readTeams = await connect(s.mcpUrl, await keyWith(s, 'admin', ['mcp:teams:read']), { elicit: approve });
      expect(data(await call(readTeams, 'whoami')).capabilities).toEqual(['mcp:teams:read']);
      const denied = await call(readTeams, 'list_orders');
      expect(denied.isError).toBe(true);
      expect(textJson(denied).error).toEqual({
        code: 'missing_capability',
        message: 'list_orders requires mcp:orders:read, which this credential lacks',
        details: { required: 'mcp:orders:read' },
      });
      // A write needs its own capability: the read does not imply it, and no approval is asked for a call that cannot run.
      const write = await call(readTeams, 'create_team', { name: 'Never', companyId: s.demo.companies.acme });
      expect(textJson(write).error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:teams:write' } });
      expect(readTeams.elicitations).toEqual([]);
      await readTeams.close();
    });

    it('narrows a key by its user role: an employee key never reaches a write tool', async () => {
      const employee = await connect(s.mcpUrl, s.demo.apiKeys.employee, { elicit: approve });
      const result = await call(employee, 'create_team', { name: 'Nope' });
      expect(textJson(result).error.code).toBe('missing_capability');
      expect(employee.elicitations).toEqual([]);
      await employee.close();
    });
  });

  describe('approval of writes', () => {
    const teamNames = async () =>
      (await client(s.app, s.demo.apiKeys.admin).get('/v4/teams?limit=50')).body.data.teams.map((t: { name: string }) => t.name);

    it('runs a write the user approves through elicitation', async () => {
      const c = await connect(s.mcpUrl, s.demo.apiKeys.admin, { elicit: approve });
      const result = await call(c, 'create_team', { name: 'Approved Team', companyId: s.demo.companies.acme });
      expect(data(result)).toMatchObject({ name: 'Approved Team' });
      expect(c.elicitations).toHaveLength(1);
      expect(c.elicitations[0]!.params).toMatchObject({
        message: expect.stringContaining('"name": "Approved Team"'),
        requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' } } },
      });
      expect(await teamNames()).toContain('Approved Team');
      await c.close();
    });

    it.each([
      ['decline', { action: 'decline' as const }],
      ['cancel', { action: 'cancel' as const }],
      ['unchecked', { action: 'accept' as const, content: { approve: false } }],
    ])('does nothing when the user answers %s', async (how, answer) => {
      const c = await connect(s.mcpUrl, s.demo.apiKeys.admin, { elicit: () => answer });
      const name = `Declined ${how}`;
      const result = await call(c, 'create_team', { name, companyId: s.demo.companies.acme });
      expect(result.isError).toBe(true);
      expect(textJson(result).error).toEqual({ code: 'approval_declined', message: `The user did not approve create_team (${how}); nothing was done` });
      expect(await teamNames()).not.toContain(name);
      await c.close();
    });

    it('runs a write without a prompt for a client without elicitation: the annotations are its cue', async () => {
      const c = await connect(s.mcpUrl, s.demo.apiKeys.admin);
      const result = await call(c, 'create_team', { name: 'Unprompted Team', companyId: s.demo.companies.acme });
      expect(data(result)).toMatchObject({ name: 'Unprompted Team' });
      expect(c.elicitations).toEqual([]);
      await c.close();
    });

    it('never asks for reads', async () => {
      const c = await connect(s.mcpUrl, s.demo.apiKeys.admin, { elicit: approve });
      data(await call(c, 'list_teams'));
      expect(c.elicitations).toEqual([]);
      await c.close();
    });
  });

  it('counts tool calls by tool and outcome on /metrics', async () => {
    const metrics = (await s.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/svc_mcp_tool_calls_total\{tool="whoami",outcome="ok"\} [1-9]/);
    expect(metrics).toMatch(/svc_mcp_tool_calls_total\{tool="list_orders",outcome="denied"\} [1-9]/);
    expect(metrics).toMatch(/svc_mcp_tool_calls_total\{tool="create_team",outcome="declined"\} [1-9]/);
    expect(metrics).toMatch(/svc_mcp_tool_calls_total\{tool="get_employee",outcome="not_found"\} [1-9]/);
  });
});
