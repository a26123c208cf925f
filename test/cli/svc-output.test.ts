import stringWidth from 'string-width';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renderData, renderTable, terminalWidth, truncate, UNBOUNDED } from '../../cli/output.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { OPERATIONS } from '../../src/app/operation-table.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { isolatedEnv, listen, svc, type SvcResult } from './svc-runner.js';

/*
 * How svc shows data to people: tables measured in display columns, columns in the order each
 * operation declares, long values cut in tables only, nested records rendered as fields.
 */

/** The display column at which each of `values` starts in `line`. */
const columnsOf = (line: string, values: string[]) => values.map((v) => stringWidth(line.slice(0, line.indexOf(v))));

describe('svc tables', () => {
  it('measures cells in display columns: a wide-character name does not shift the columns after it', () => {
    const records = [
      { name: '山田太郎', email: 'taro@acme.example', team: 'Sales' },
      { name: 'Ann Lee', email: 'ann@acme.example', team: 'Engineering' },
      { name: 'José Müller', email: 'jose@acme.example', team: 'Operations' },
    ];
    const lines = renderTable(records, 100).text.trimEnd().split('\n');
    const header = columnsOf(lines[0]!, ['NAME', 'EMAIL', 'TEAM']);
    records.forEach((r, i) => expect(columnsOf(lines[i + 1]!, [r.name, r.email, r.team])).toEqual(header));
    expect(header).toEqual([0, 13, 32]);
  });

  it('fits the terminal’s width, else COLUMNS, else none: piped output is never cut', () => {
    const piped = { isTTY: false } as unknown as NodeJS.WritableStream;
    const terminal = { isTTY: true, columns: 90 } as unknown as NodeJS.WritableStream;
    expect(terminalWidth({ stdout: terminal, env: { COLUMNS: '200' } })).toBe(90);
    expect(terminalWidth({ stdout: piped, env: { COLUMNS: '120' } })).toBe(120);
    expect(terminalWidth({ stdout: piped, env: {} })).toBe(UNBOUNDED);
    const long = `Team ${'x'.repeat(80)}`;
    const whole = renderTable([{ id: 'team_1', name: long, description: 'y'.repeat(200) }], UNBOUNDED);
    expect(whole).toEqual({ text: `ID      NAME${' '.repeat(long.length - 2)}DESCRIPTION\nteam_1  ${long}  ${'y'.repeat(200)}\n`, hidden: [] });
  });

  it('cuts long values with an ellipsis to the display width, never inside a wide character', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('山田太郎', 6)).toBe('山田…');
    expect(truncate('山田太郎', 5)).toBe('山田…');
    expect(stringWidth(truncate('山田太郎', 5))).toBe(5);
    expect(truncate('short', 10)).toBe('short');

    const long = `Team ${'x'.repeat(80)}`;
    const table = renderTable([{ id: 'team_1', name: long }], 100).text;
    expect(table).toContain(`${long.slice(0, 35)}…`);
    expect(table).not.toContain(long);
    // text (for scripts) and json are never cut.
    expect(renderData({ teams: [{ id: 'team_1', name: long }] }, 'text', 40).stdout).toBe(`team_1\t${long}\n`);
  });

  it('orders columns by the declaration, reads dotted paths, and hides the least important first', () => {
    const devices = [
      { id: 'dev_1', companyId: 'co_acme', serialNumber: 'SN-1', status: 'Assigned', assignment: { employeeId: 'emp_1', displayName: 'Dana Developer' } },
      { id: 'dev_2', companyId: 'co_acme', serialNumber: 'SN-2', status: 'Available', assignment: null },
    ];
    const { text, hidden } = renderTable(devices, 40, false, ['serialNumber', 'status', 'assignment.displayName']);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SERIALNUMBER +STATUS +ASSIGNMENT$/);
    expect(lines[1]).toMatch(/^SN-1 +Assigned +Dana Developer$/);
    expect(lines[2]).toMatch(/^SN-2 +Available$/);
    expect(hidden).toEqual(['id', 'companyId']);
    // The first column that does not fit whole is cut to the room left when that is worth it (12 or more).
    const noted = devices.map((d) => ({ ...d, note: 'n'.repeat(30) }));
    const order = ['serialNumber', 'status', 'assignment.displayName', 'note'];
    expect(renderTable(noted, 52, false, order).hidden).toEqual(['note', 'id', 'companyId']);
    const cut = renderTable(noted, 53, false, order);
    expect(cut.text.split('\n')[1]).toMatch(/^SN-1 +Assigned +Dana Developer +n{11}…$/);
    expect(cut.hidden).toEqual(['id', 'companyId']);
  });

  it('declares columns that exist in each operation’s output, with the issue’s priorities', () => {
    for (const op of OPERATIONS) {
      for (const [list, columns] of Object.entries(op.columns ?? {})) {
        const schema = z.toJSONSchema(op.output, { io: 'output', unrepresentable: 'any' }) as { properties: Record<string, any> };
        const record = schema.properties[list]?.items;
        expect(record, `${op.name}: no list ${list}`).toBeDefined();
        for (const path of columns) {
          const [field, nested] = path.split('.');
          const property = record.properties[field!];
          expect(property, `${op.name}: ${list}.${path}`).toBeDefined();
          if (nested) expect(JSON.stringify(property), `${op.name}: ${list}.${path}`).toContain(`"${nested}"`);
        }
      }
    }
    const columns = (name: string, list: string) => OPERATIONS.find((o) => o.name === name)!.columns![list]!;
    const devices = columns('search_inventory', 'devices');
    expect(devices.indexOf('status')).toBeGreaterThanOrEqual(0);
    expect(devices.some((c) => c.startsWith('assignment'))).toBe(true);
    expect(devices).not.toContain('companyId');
    expect(columns('list_legacy_keys', 'keys')).toEqual(expect.arrayContaining(['scopes', 'lastUsedAt']));
  });
});

describe('svc records', () => {
  const legacyKey = {
    key: {
      id: 'lk_1',
      name: 'Address sync',
      scopes: ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update'],
      disabledAt: null,
    },
    usage: [{ day: '2026-11-01', endpoint: 'GET /employees/:id/deliveryAddress', scope: 'api.employee.deliveryAddress.get', calls: 3 }],
  };

  it('renders a nested record as indented fields and wraps lists between items, never a JSON blob cut mid-word', () => {
    const { stdout } = renderData(legacyKey, 'table', 60, false, { usage: ['day', 'calls', 'endpoint', 'scope'] });
    expect(stdout).not.toContain('{');
    const lines = stdout.split('\n');
    expect(lines.slice(0, 7)).toEqual([
      'key',
      '  id          lk_1',
      '  name        Address sync',
      '  scopes      api.employee.deliveryAddress.get,',
      '              api.employee.deliveryAddress.create,',
      '              api.employee.deliveryAddress.update',
      '  disabledAt',
    ]);
    // Beside other fields, the table is named; its columns are the declared ones first.
    expect(lines[8]).toBe('usage');
    expect(lines[9]).toMatch(/^DAY +CALLS +ENDPOINT/);
  });

  it('shows lists of records inside a record as items, and nested values in a table cell as fields', () => {
    const order = { id: 'ord_1', shipments: [{ id: 'shp_1', carrier: 'DHL' }, { id: 'shp_2', carrier: 'UPS' }], deviceRequests: [] };
    const { stdout } = renderData({ order }, 'table', 80);
    expect(stdout).toBe('order\n  id              ord_1\n  shipments\n  - id       shp_1\n    carrier  DHL\n  - id       shp_2\n    carrier  UPS\n  deviceRequests\n');
    const table = renderTable([{ id: 'dev_1', specs: { cpu: 'M3', ramGb: 16, storageGb: null } }], 80).text;
    expect(table).toContain('cpu: M3, ramGb: 16');
  });
});

describe('svc output from a started server [pglite]', { timeout: 120_000 }, () => {
  let t: TestApp;
  /** `columns`: the COLUMNS of the run; null, none, as when svc is piped from a shell that does not export it. */
  let admin: (args: string[], columns?: number | null) => Promise<SvcResult>;

  beforeAll(async () => {
    t = await startTestApp('pglite');
    const url = await listen(t);
    const env = isolatedEnv();
    const { COLUMNS: _columns, ...piped } = env;
    admin = (args, columns = 200) =>
      svc([...args, '--api-url', url, '--allow-localhost', '--api-key', t.demo.apiKeys.admin], columns === null ? piped : { ...piped, COLUMNS: String(columns) });
  });
  afterAll(async () => t?.close());

  const ok = (result: SvcResult) => {
    expect(result.code, result.stderr).toBe(0);
    return result.stdout;
  };

  it('keeps the columns after a wide-character name in place', async () => {
    const acme = ['--company-id', t.demo.companies.acme];
    ok(await admin(['employees', 'create', ...acme, '--display-name', '山田太郎', '--email', 'taro@acme.example', '--team-name', 'Sales']));
    const lines = ok(await admin(['employees', 'list', ...acme, '--limit', '50'])).trimEnd().split('\n');
    expect(lines.some((l) => l.includes('山田太郎'))).toBe(true);
    const emailColumn = stringWidth(lines[0]!.slice(0, lines[0]!.indexOf('EMAIL')));
    const teamColumn = stringWidth(lines[0]!.slice(0, lines[0]!.indexOf('TEAMNAME')));
    for (const line of lines.slice(1)) {
      const email = /\S+@\S+/.exec(line)![0];
      expect(columnsOf(line, [email]), line).toEqual([emailColumn]);
      expect(stringWidth(line.slice(0, line.indexOf(email) + email.length)), line).toBeLessThan(teamColumn);
    }
  });

  it('shows what matters of a device first: status and assignment before ids and companyId', async () => {
    const result = await admin(['inventory', 'search', '--company-id', t.demo.companies.acme, '--limit', '5'], 100);
    const header = ok(result).split('\n')[0]!;
    expect(header).toMatch(/^SERIALNUMBER +PRODUCTTYPE +MODEL +STATUS +ASSIGNMENT +LOCATION\b/);
    expect(header).not.toContain('COMPANYID');
    expect(result.stdout).toMatch(/^SN-\S+ +\S+ +.+ +Assigned +\S.* +[A-Z]{2} /m);
    expect(result.stderr).toMatch(/column\(s\) hidden to fit 100 columns \(.*companyId/);
  });

  it('lists legacy keys with their cutover stage, scopes and last use, and reads one without a JSON blob', async () => {
    const scopes = ['api.employee.deliveryAddress.get', 'api.employee.deliveryAddress.create', 'api.employee.deliveryAddress.update'];
    const key = await createLegacyKey(t.core, t.core.mappings, { companyId: t.demo.companies.acme, name: 'Address sync', scopes });
    const list = ok(await admin(['legacy-keys', 'list'], 100)).split('\n');
    expect(list[0]).toMatch(/^ID +NAME +CUTOVER +LASTUSEDAT +SCOPES/);
    expect(list.find((l) => l.startsWith(key.id))).toMatch(/Address sync +v2_only +api\.employee\.deliveryAddress\.get, .*…$/);

    const read = ok(await admin(['legacy-keys', 'get', key.id], 80));
    expect(read).not.toMatch(/[{}"]/);
    expect(read).toMatch(new RegExp(`^key\\n  id +${key.id}$`, 'm'));
    // Each scope whole on a line of its own: wrapped between items, never inside one.
    for (const scope of scopes) expect(read).toMatch(new RegExp(`^ +(scopes +)?${scope.replaceAll('.', '\\.')},?$`, 'm'));
  });

  it('cuts a long value with an ellipsis in the table only, never in text or json', async () => {
    const name = `Team with a very long name ${'x'.repeat(60)}`;
    ok(await admin(['teams', 'create', '--company-id', t.demo.companies.acme, '--name', name]));
    const args = ['teams', 'list', '--company-id', t.demo.companies.acme, '--limit', '50'];
    const table = ok(await admin(args));
    expect(table).toContain(`${name.slice(0, 35)}…`);
    expect(table).not.toContain(name);
    expect(ok(await admin([...args, '--format', 'text']))).toContain(`\t${name}\t`);
    // Piped with no COLUMNS there is no width to fit: the table prints every cell and column whole.
    const piped = await admin(args, null);
    expect(ok(piped)).toMatch(new RegExp(`^\\S+ +${name} +`, 'm'));
    expect(piped.stdout).not.toContain('…');
    expect(piped.stderr).not.toContain('hidden');
    expect(JSON.parse(ok(await admin([...args, '--format', 'json']))).data.teams.map((team: { name: string }) => team.name)).toContain(name);
  });
});
