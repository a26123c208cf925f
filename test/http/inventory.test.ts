import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_CEILING } from '../../src/access/capabilities.js';
import { createUser, mintKeyForUser } from '../../src/domain/admin.js';
import { decryptSecret } from '../../src/domain/pin-crypto.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type ApiResponse, type TestApp } from '../helpers/harness.js';
import { keyWith } from '../helpers/keys.js';

const LAPTOP_STD = { cpu: 'Intel Core Ultra 7', ramGb: 32, storageGb: 512, screenInches: 14, releaseYear: 2024 };

describe.each(backends())('inventory [%s]', (backend) => {
  let t: TestApp;
  /** An admin of Globex only: a writer whose reach stops at one company. */
  let globexAdminKey: string;
  beforeAll(async () => {
    t = await startTestApp(backend);
    await createUser(t.core.db, { email: 'gadmin@globex.example', displayName: 'Globex Admin', role: 'admin', companyIds: [t.demo.companies.globex] });
    globexAdminKey = (await mintKeyForUser(t.core.db, 'gadmin@globex.example', ROLE_CEILING.admin)).rawKey;
  });
  afterAll(() => t.close());

  const admin = () => client(t.app, t.demo.apiKeys.admin);
  const manager = () => client(t.app, t.demo.apiKeys.manager);
  const employee = () => client(t.app, t.demo.apiKeys.employee);
  const idsOf = (res: ApiResponse) => res.body.data.devices.map((d: { id: string }) => d.id).sort();
  const demoIds = (...keys: string[]) => keys.map((k) => t.demo.devices[k]!).sort();
  const fieldsOf = (res: ApiResponse) => res.body.error.details.map((d: { field: string }) => d.field).sort();
  const serialOf = async (key: string): Promise<string> =>
    (await admin().get(`/v4/products/${t.demo.devices[key]}`)).body.data.serialNumber;

  const MANAGER_DEVICES = [
    'erikLaptop', 'danaLaptop', 'danaMonitor', 'hansDesktop',
    'stockLaptopDe1', 'stockLaptopDe2', 'stockPhoneDe', 'stockMonitor', 'stockHeadset', 'repairLaptop',
  ];

  describe('search_inventory', () => {
    it('lists every device of every company an admin administers', async () => {
      const res = await admin().get('/v4/inventory?limit=50');
      expect(res.status).toBe(200);
      expect(res.body.data.totalCount).toBe(22);
      const companies = new Set(res.body.data.devices.map((d: { companyId: string }) => d.companyId));
      expect(companies).toEqual(new Set([t.demo.companies.acme, t.demo.companies.globex]));
      const globexOnly = await admin().get(`/v4/inventory?companyId=${t.demo.companies.globex}`);
      expect(idsOf(globexOnly)).toEqual(demoIds('gretaLaptop', 'globexStockLaptop'));
    });

    it('pages with a cursor through every device exactly once', async () => {
      const api = admin();
      const seen: string[] = [];
      let url = '/v4/inventory?limit=5';
      for (let page = 1; ; page++) {
        const res = await api.get(url);
        expect(res.status).toBe(200);
        expect(res.body.data).toMatchObject({ page, pageSize: 5, totalCount: 22 });
        seen.push(...res.body.data.devices.map((d: { id: string }) => d.id));
        if (!res.body.data.nextCursor) break;
        url = `/v4/inventory?limit=5&cursor=${res.body.data.nextCursor}`;
      }
      expect(seen).toHaveLength(22);
      expect(new Set(seen).size).toBe(22);
      const byOffset = await api.get('/v4/inventory?limit=5&page=2');
      expect(byOffset.body.data.devices.map((d: { id: string }) => d.id)).toEqual(seen.slice(5, 10));
    });

    it('returns the full device record: location, assignment, PIN flag, never the PIN', async () => {
      const res = await admin().get(`/v4/inventory?query=${await serialOf('stockLaptopDe1')}`);
      expect(res.body.data.devices).toHaveLength(1);
      expect(res.body.data.devices[0]).toMatchObject({
        id: t.demo.devices.stockLaptopDe1,
        productType: 'Laptops',
        category: 'Computers',
        manufacturer: 'Lenovo',
        model: 'ThinkPad X1 Carbon',
        specScore: 166,
        condition: 'New',
        status: 'Available',
        inStock: true,
        location: { country: 'DE', alias: 'Berlin Warehouse', city: 'Berlin' },
        assignment: null,
        pinCodeSet: false,
        pinCodeSetAt: null,
      });
      const held = (await admin().get(`/v4/products/${t.demo.devices.eveLaptop}`)).body.data;
      expect(held).toMatchObject({
        status: 'Assigned',
        inStock: false,
        location: { country: 'US', companyAddressId: null, alias: null, city: null },
        assignment: { employeeId: t.demo.employees.eve, displayName: 'Eve Employee' },
      });
      expect(Date.parse(held.assignment.assignedAt)).not.toBeNaN();
    });

    it('searches free text over serial number, manufacturer and model, escaping LIKE wildcards', async () => {
      const api = admin();
      const thinkpads = await api.get('/v4/inventory?query=thinkpad');
      expect(idsOf(thinkpads)).toEqual(demoIds('erikLaptop', 'danaLaptop', 'stockLaptopDe1', 'globexStockLaptop'));
      const byMakeAndModel = await api.get('/v4/inventory?query=apple%20macbook');
      expect(idsOf(byMakeAndModel)).toEqual(demoIds('eveLaptop', 'stockLaptopUs1', 'gretaLaptop'));
      const bySerial = await api.get('/v4/inventory?query=sn-gx');
      expect(bySerial.body.data.totalCount).toBe(2);
      expect((await api.get('/v4/inventory?query=%25')).body.data.totalCount).toBe(0);
      expect((await api.get('/v4/inventory?query=SN_AC')).body.data.totalCount).toBe(0);
    });

    it('filters by inStock, category, productType, country and status', async () => {
      const api = admin();
      const inStock = await api.get('/v4/inventory?inStock=true&limit=50');
      expect(inStock.body.data.totalCount).toBe(13);
      expect(inStock.body.data.devices.every((d: { status: string }) => d.status === 'Available')).toBe(true);
      const notInStock = await api.get('/v4/inventory?inStock=false&limit=50');
      expect(notInStock.body.data.totalCount).toBe(9);
      expect(notInStock.body.data.devices.some((d: { status: string }) => d.status === 'Available')).toBe(false);
      const computersDe = await api.get('/v4/inventory?category=Computers&country=de');
      expect(idsOf(computersDe)).toEqual(
        demoIds('danaLaptop', 'hansDesktop', 'stockLaptopDe1', 'stockLaptopDe2', 'repairLaptop', 'gretaLaptop', 'globexStockLaptop'),
      );
      const repairs = await api.get('/v4/inventory?status=In%20Repair');
      expect(idsOf(repairs)).toEqual(demoIds('repairLaptop'));
      const desktops = await api.get('/v4/inventory?productType=Desktops&inStock=false');
      expect(idsOf(desktops)).toEqual(demoIds('hansDesktop', 'retiredDesktop'));
    });

    it('scopes a manager to their employees’ devices and unassigned stock in their region', async () => {
      const res = await manager().get('/v4/inventory?limit=50');
      expect(res.status).toBe(200);
      expect(idsOf(res)).toEqual(demoIds(...MANAGER_DEVICES));
      expect(res.body.data.totalCount).toBe(MANAGER_DEVICES.length);
    });

    it('shows an employee only their own devices, whatever the filters', async () => {
      const res = await employee().get('/v4/inventory');
      expect(idsOf(res)).toEqual(demoIds('eveLaptop', 'evePhone'));
      expect((await employee().get('/v4/inventory?inStock=true')).body.data.totalCount).toBe(0);
    });

    it('names the field and lists the allowed values of an unknown enum value', async () => {
      const api = admin();
      const category = await api.get('/v4/inventory?category=Gadgets');
      expect(category.status).toBe(400);
      expect(category.body.error.code).toBe('validation_failed');
      expect(category.body.error.details[0]).toMatchObject({ field: 'category', rule: 'invalid_value' });
      expect(category.body.error.details[0].message).toContain('Phones & Tablets');
      const status = await api.get('/v4/inventory?status=Broken&productType=Phones&inStock=maybe');
      expect(status.status).toBe(400);
      expect(fieldsOf(status)).toEqual(['inStock', 'productType', 'status']);
      expect(JSON.stringify(status.body.error.details)).toContain('In Repair');
      const unknown = await api.get('/v4/inventory?colour=red');
      expect(unknown.body.error.details[0]).toMatchObject({ field: 'colour', rule: 'unknown_field' });
    });

    it('refuses a company the caller does not belong to', async () => {
      const res = await manager().get(`/v4/inventory?companyId=${t.demo.companies.globex}`);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('company_not_accessible');
    });

    it('denies a key without mcp:inventory:read', async () => {
      const res = await client(t.app, await keyWith(t, 'admin', ['mcp:inventory:write'])).get('/v4/inventory');
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'missing_capability', details: { required: 'mcp:inventory:read' } });
    });
  });

  describe('get_assigned_devices', () => {
    it("lists an employee's devices for an admin", async () => {
      const res = await admin().get(`/v4/employees/${t.demo.employees.dana}/devices`);
      expect(res.status).toBe(200);
      expect(idsOf(res)).toEqual(demoIds('danaLaptop', 'danaMonitor'));
      expect(res.body.data).toMatchObject({ page: 1, totalCount: 2, nextCursor: null });
      const globex = await admin().get(`/v4/employees/${t.demo.employees.greta}/devices`);
      expect(idsOf(globex)).toEqual(demoIds('gretaLaptop'));
    });

    it('lets an employee list only their own devices', async () => {
      const own = await employee().get(`/v4/employees/${t.demo.employees.eve}/devices`);
      expect(idsOf(own)).toEqual(demoIds('eveLaptop', 'evePhone'));
      const other = await employee().get(`/v4/employees/${t.demo.employees.dana}/devices`);
      expect(other.status).toBe(404);
    });

    it('lets a manager list devices of employees in scope only', async () => {
      expect(idsOf(await manager().get(`/v4/employees/${t.demo.employees.hans}/devices`))).toEqual(demoIds('hansDesktop'));
      expect((await manager().get(`/v4/employees/${t.demo.employees.eve}/devices`)).status).toBe(404);
      expect((await manager().get(`/v4/employees/${t.demo.employees.greta}/devices`)).status).toBe(404);
    });

    it('answers 404 for an unknown employee and 400 for bad paging', async () => {
      expect((await admin().get('/v4/employees/emp_nope/devices')).status).toBe(404);
      const bad = await admin().get(`/v4/employees/${t.demo.employees.dana}/devices?limit=0`);
      expect(bad.status).toBe(400);
      expect(fieldsOf(bad)).toEqual(['limit']);
    });

    it('denies a key without mcp:inventory:read', async () => {
      const key = await keyWith(t, 'employee', ['mcp:employees:read']);
      expect((await client(t.app, key).get(`/v4/employees/${t.demo.employees.eve}/devices`)).status).toBe(403);
    });
  });

  describe('get_product', () => {
    it('reads a device by productId and by serial number', async () => {
      const byId = await admin().get(`/v4/products/${t.demo.devices.hansDesktop}`);
      expect(byId.status).toBe(200);
      expect(byId.body.data).toMatchObject({ productType: 'Desktops', assignment: { employeeId: t.demo.employees.hans } });
      const bySerial = await admin().get(`/v4/products/${encodeURIComponent(byId.body.data.serialNumber)}`);
      expect(bySerial.status).toBe(200);
      expect(bySerial.body.data).toEqual(byId.body.data);
    });

    it('reaches every company of an admin', async () => {
      const res = await admin().get(`/v4/products/${t.demo.devices.globexStockLaptop}`);
      expect(res.body.data).toMatchObject({ companyId: t.demo.companies.globex, location: { alias: 'Munich Office' } });
    });

    it('lets an employee read only their own devices', async () => {
      expect((await employee().get(`/v4/products/${t.demo.devices.evePhone}`)).status).toBe(200);
      const other = await employee().get(`/v4/products/${t.demo.devices.stockLaptopUs1}`);
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('not_found');
      expect((await employee().get(`/v4/products/${await serialOf('danaLaptop')}`)).status).toBe(404);
    });

    it('lets a manager read devices in scope only', async () => {
      expect((await manager().get(`/v4/products/${t.demo.devices.stockLaptopDe1}`)).status).toBe(200);
      expect((await manager().get(`/v4/products/${t.demo.devices.erikLaptop}`)).status).toBe(200);
      expect((await manager().get(`/v4/products/${t.demo.devices.stockLaptopUs1}`)).status).toBe(404);
      expect((await manager().get(`/v4/products/${t.demo.devices.eveLaptop}`)).status).toBe(404);
    });

    it('answers 404 for an unknown device and 400 for an unknown parameter', async () => {
      expect((await admin().get('/v4/products/SN-NOPE')).status).toBe(404);
      const bad = await admin().get(`/v4/products/${t.demo.devices.evePhone}?verbose=1`);
      expect(bad.status).toBe(400);
      expect(fieldsOf(bad)).toEqual(['verbose']);
    });

    it('denies a key without mcp:inventory:read', async () => {
      const key = await keyWith(t, 'admin', ['mcp:employees:read']);
      expect((await client(t.app, key).get(`/v4/products/${t.demo.devices.evePhone}`)).status).toBe(403);
    });
  });

  describe('get_device_options', () => {
    it('ranks Laptops by specification, then availability, then name', async () => {
      const res = await admin().get('/v4/devices/options?productType=Laptops');
      expect(res.status).toBe(200);
      expect(res.body.data.options).toEqual([
        expect.objectContaining({ rank: 1, manufacturer: 'Apple', model: 'MacBook Pro 14', specScore: 185, inStock: 1, countries: ['US'], sampleProductIds: [t.demo.devices.stockLaptopUs1] }),
        expect.objectContaining({ rank: 2, manufacturer: 'Lenovo', model: 'ThinkPad X1 Carbon', specScore: 166, inStock: 2, countries: ['DE'] }),
        expect.objectContaining({ rank: 3, manufacturer: 'Dell', model: 'Latitude 5440', specScore: 93, inStock: 2, countries: ['DE', 'US'] }),
      ]);
      expect(res.body.data.options[0].specs).toMatchObject({ cpu: 'Apple M3 Pro', ramGb: 36 });
      expect([...res.body.data.options[2].sampleProductIds].sort()).toEqual(demoIds('stockLaptopDe2', 'stockLaptopUs2'));
    });

    it('filters by country and truncates to limit', async () => {
      const us = await admin().get('/v4/devices/options?productType=Laptops&country=US');
      expect(us.body.data.options.map((o: { model: string }) => o.model)).toEqual(['MacBook Pro 14', 'Latitude 5440']);
      const top = await admin().get('/v4/devices/options?productType=Laptops&limit=1');
      expect(top.body.data.options).toHaveLength(1);
    });

    it('ranks only the stock a manager can see, and none for an employee', async () => {
      const res = await manager().get('/v4/devices/options?productType=Laptops');
      expect(res.body.data.options).toEqual([
        expect.objectContaining({ rank: 1, model: 'ThinkPad X1 Carbon', inStock: 1, sampleProductIds: [t.demo.devices.stockLaptopDe1] }),
        expect.objectContaining({ rank: 2, model: 'Latitude 5440', inStock: 1, sampleProductIds: [t.demo.devices.stockLaptopDe2] }),
      ]);
      expect((await employee().get('/v4/devices/options?productType=Laptops')).body.data.options).toEqual([]);
    });

    it('requires a known productType', async () => {
      const missing = await admin().get('/v4/devices/options');
      expect(missing.status).toBe(400);
      expect(fieldsOf(missing)).toEqual(['productType']);
      const unknown = await admin().get('/v4/devices/options?productType=Laptop');
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.details[0].message).toContain('Laptops');
    });

    it('denies a key without mcp:inventory:read', async () => {
      const key = await keyWith(t, 'manager', ['mcp:employees:read']);
      expect((await client(t.app, key).get('/v4/devices/options?productType=Laptops')).status).toBe(403);
    });
  });

  describe('suggest_alternative_device', () => {
    it('suggests catalog laptops purchasable in DE, quickest delivery first, skipping items out of stock', async () => {
      const res = await employee().get('/v4/devices/suggestions?country=de&productType=Laptops');
      expect(res.status).toBe(200);
      expect(res.body.data.country).toBe('DE');
      expect(res.body.data.suggestions).toEqual([
        expect.objectContaining({ name: 'ThinkPad X1 Carbon Gen 12', manufacturer: 'Lenovo', leadTimeDays: 2, stock: 30, price: 1899, currency: 'USD', category: 'Computers' }),
        expect.objectContaining({ name: 'MacBook Pro 14 M3 Pro', leadTimeDays: 5, stock: 12, specScore: 185 }),
      ]);
      expect(res.body.data.suggestions[0].itemId).toMatch(/^cat_/);
    });

    it('orders by lead time, then specification, across every type', async () => {
      const res = await admin().get('/v4/devices/suggestions?country=DE&limit=50');
      const rows: Array<{ leadTimeDays: number; specScore: number; stock: number }> = res.body.data.suggestions;
      expect(rows).toHaveLength(12);
      for (let i = 1; i < rows.length; i++) {
        const [a, b] = [rows[i - 1]!, rows[i]!];
        expect(a.leadTimeDays < b.leadTimeDays || (a.leadTimeDays === b.leadTimeDays && a.specScore >= b.specScore)).toBe(true);
      }
      expect(rows.every((r) => r.stock > 0)).toBe(true);
      expect((await admin().get('/v4/devices/suggestions?country=DE')).body.data.suggestions).toHaveLength(10);
    });

    it('returns an empty list for a country without catalog availability', async () => {
      const res = await admin().get('/v4/devices/suggestions?country=JP');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ country: 'JP', suggestions: [] });
    });

    it('requires a two-letter country', async () => {
      const missing = await admin().get('/v4/devices/suggestions?productType=Laptops');
      expect(missing.status).toBe(400);
      expect(fieldsOf(missing)).toEqual(['country']);
      const bad = await admin().get('/v4/devices/suggestions?country=Germany');
      expect(bad.status).toBe(400);
      expect(bad.body.error.details[0].field).toBe('country');
    });

    it('denies a key without mcp:inventory:read', async () => {
      const key = await keyWith(t, 'admin', ['mcp:inventory:write']);
      expect((await client(t.app, key).get('/v4/devices/suggestions?country=DE')).status).toBe(403);
    });
  });

  describe('add_product_pin_code', () => {
    const storedPin = async (id: string) =>
      (await t.core.db.query<{ pin_ciphertext: string | null }>(sql`SELECT pin_ciphertext FROM devices WHERE id = ${id}`))[0]!.pin_ciphertext;

    it.each([
      ['Laptops', 'stockLaptopDe1', 'productId'],
      ['Mobile', 'evePhone', 'serialNumber'],
      ['Tablet', 'stockTablet', 'productId'],
      ['Desktops', 'hansDesktop', 'serialNumber'],
    ] as const)('stores a PIN for %s, encrypted and never returned', async (_type, key, by) => {
      const id = t.demo.devices[key]!;
      const pinCode = '80417263';
      const ref = by === 'productId' ? { productId: id } : { serialNumber: await serialOf(key) };
      const res = await admin().post('/v4/products/pin-code', { ...ref, pinCode });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ id, pinCodeSet: true });
      expect(Date.parse(res.body.data.pinCodeSetAt)).not.toBeNaN();
      expect(JSON.stringify(res.body)).not.toContain(pinCode);
      const read = await admin().get(`/v4/products/${id}`);
      expect(read.body.data.pinCodeSet).toBe(true);
      expect(JSON.stringify(read.body)).not.toContain(pinCode);

      const stored = await storedPin(id);
      expect(stored).toBeTruthy();
      expect(stored).not.toContain(pinCode);
      expect(Buffer.from(stored!, 'base64').toString('latin1')).not.toContain(pinCode);
      expect(decryptSecret(t.core.secretKey, stored!, id)).toBe(pinCode);
    });

    it('replaces a PIN with a fresh ciphertext, leading zeros kept', async () => {
      const id = t.demo.devices.stockLaptopUs1!;
      await admin().post('/v4/products/pin-code', { productId: id, pinCode: '1111' });
      const first = await storedPin(id);
      await admin().post('/v4/products/pin-code', { productId: id, pinCode: '0007' });
      const second = await storedPin(id);
      expect(second).not.toBe(first);
      expect(decryptSecret(t.core.secretKey, second!, id)).toBe('0007');
    });

    it('refuses a PIN for a type that takes none, with 422 naming the type', async () => {
      const res = await admin().post('/v4/products/pin-code', { productId: t.demo.devices.stockMonitor, pinCode: '1234' });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('pin_not_supported_for_type');
      expect(res.body.error.message).toContain('Monitors');
      expect(res.body.error.message).toContain('Desktops, Laptops, Mobile, Tablet');
      expect(res.body.error.details[0]).toMatchObject({ field: 'productId', productType: 'Monitors' });
      expect(await storedPin(t.demo.devices.stockMonitor!)).toBeNull();
    });

    it.each([['12a4'], ['123'], ['1234567890123'], [1234], ['']])('rejects the malformed PIN %j', async (pinCode) => {
      const res = await admin().post('/v4/products/pin-code', { productId: t.demo.devices.stockTablet, pinCode });
      expect(res.status).toBe(400);
      expect(fieldsOf(res)).toEqual(['pinCode']);
    });

    it('requires exactly one of productId and serialNumber', async () => {
      const both = await admin().post('/v4/products/pin-code', {
        productId: t.demo.devices.stockTablet,
        serialNumber: await serialOf('stockTablet'),
        pinCode: '1234',
      });
      expect(both.status).toBe(400);
      expect(both.body.error.details[0]).toMatchObject({ field: 'productId', message: expect.stringContaining('exactly one') });
      const neither = await admin().post('/v4/products/pin-code', { pinCode: '1234' });
      expect(neither.status).toBe(400);
      expect(fieldsOf(neither)).toEqual(['productId']);
    });

    it('answers 404 for a device that does not exist', async () => {
      const res = await admin().post('/v4/products/pin-code', { serialNumber: 'SN-NOPE', pinCode: '1234' });
      expect(res.status).toBe(404);
    });

    it('reaches another company of an admin, but not a company outside an admin’s reach', async () => {
      const res = await admin().post('/v4/products/pin-code', { productId: t.demo.devices.gretaLaptop, pinCode: '4321' });
      expect(res.status).toBe(200);
      const outside = await client(t.app, globexAdminKey).post('/v4/products/pin-code', { productId: t.demo.devices.eveLaptop, pinCode: '4321' });
      expect(outside.status).toBe(404);
    });

    it('denies keys without mcp:inventory:write, including every manager and employee', async () => {
      const readOnly = await keyWith(t, 'admin', ['mcp:inventory:read']);
      const body = { productId: t.demo.devices.stockTablet, pinCode: '1234' };
      for (const key of [readOnly, t.demo.apiKeys.manager, t.demo.apiKeys.employee]) {
        const res = await client(t.app, key).post('/v4/products/pin-code', body);
        expect(res.status).toBe(403);
        expect(res.body.error.details).toEqual({ required: 'mcp:inventory:write' });
      }
    });
  });

  describe('register_products', () => {
    it('registers stock all at once, with category, score and location derived', async () => {
      const warehouse = (await admin().get(`/v4/products/${t.demo.devices.stockLaptopDe1}`)).body.data.location.companyAddressId;
      const res = await admin().post('/v4/products', {
        companyId: t.demo.companies.acme,
        products: [
          { serialNumber: 'REG-001', productType: 'Laptops', manufacturer: 'Framework', model: 'Laptop 13', specs: LAPTOP_STD, companyAddressId: warehouse },
          { serialNumber: 'REG-002', productType: 'Headsets', manufacturer: 'Jabra', model: 'Evolve2 85', condition: 'Good', country: 'fr' },
        ],
      });
      expect(res.status).toBe(201);
      const [laptop, headset] = res.body.data.products;
      expect(laptop).toMatchObject({
        serialNumber: 'REG-001',
        companyId: t.demo.companies.acme,
        category: 'Computers',
        specScore: 166,
        condition: 'New',
        status: 'Available',
        inStock: true,
        location: { country: 'DE', companyAddressId: warehouse, alias: 'Berlin Warehouse' },
        assignment: null,
        pinCodeSet: false,
      });
      expect(headset).toMatchObject({ serialNumber: 'REG-002', category: 'Audio', condition: 'Good', specs: {}, specScore: 0, location: { country: 'FR', companyAddressId: null } });
      const found = await admin().get('/v4/inventory?query=REG-00');
      expect(found.body.data.totalCount).toBe(2);
      // The manager sees new unassigned stock in their region (DE) but not in FR.
      expect((await manager().get(`/v4/products/${laptop.id}`)).status).toBe(200);
      expect((await manager().get(`/v4/products/${headset.id}`)).status).toBe(404);
    });

    it('refuses duplicate serials with 409 naming each offending index, and writes nothing', async () => {
      const existing = await serialOf('eveLaptop');
      const countBefore = (await admin().get('/v4/inventory')).body.data.totalCount;
      const res = await admin().post('/v4/products', {
        companyId: t.demo.companies.acme,
        products: [
          { serialNumber: 'DUP-NEW', productType: 'Mice', manufacturer: 'Logitech', model: 'M720' },
          { serialNumber: existing, productType: 'Laptops', manufacturer: 'Apple', model: 'MacBook Pro 14' },
          { serialNumber: 'DUP-NEW', productType: 'Mice', manufacturer: 'Logitech', model: 'M720' },
        ],
      });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('serial_number_taken');
      expect(fieldsOf(res)).toEqual(['products.1.serialNumber', 'products.2.serialNumber']);
      expect(res.body.error.message).toContain(existing);
      expect((await admin().get('/v4/products/DUP-NEW')).status).toBe(404);
      expect((await admin().get('/v4/inventory')).body.data.totalCount).toBe(countBefore);
    });

    it('allows the same serial in another company; a read by that serial is then ambiguous until companyId is given', async () => {
      const serial = await serialOf('eveLaptop');
      const created = await admin().post('/v4/products', {
        companyId: t.demo.companies.globex,
        products: [{ serialNumber: serial, productType: 'Keyboards', manufacturer: 'Cherry', model: 'KC 6000', country: 'DE' }],
      });
      expect(created.status).toBe(201);
      const ambiguous = await admin().get(`/v4/products/${serial}`);
      expect(ambiguous.status).toBe(409);
      expect(ambiguous.body.error.code).toBe('ambiguous_serial');
      expect([...ambiguous.body.error.details[0].companyIds].sort()).toEqual([t.demo.companies.acme, t.demo.companies.globex]);
      const chosen = await admin().get(`/v4/products/${serial}?companyId=${t.demo.companies.acme}`);
      expect(chosen.body.data.id).toBe(t.demo.devices.eveLaptop);
      expect((await employee().get(`/v4/products/${serial}`)).body.data.id).toBe(t.demo.devices.eveLaptop);
      const pin = await admin().post('/v4/products/pin-code', { serialNumber: serial, pinCode: '2468' });
      expect(pin.status).toBe(409);
      const pinChosen = await admin().post('/v4/products/pin-code', { serialNumber: serial, pinCode: '2468', companyId: t.demo.companies.acme });
      expect(pinChosen.body.data.id).toBe(t.demo.devices.eveLaptop);
    });

    it('ranks equal specifications by availability, then by name', async () => {
      const products = [
        { serialNumber: 'ZB-1', manufacturer: 'HP', model: 'ZBook' },
        { serialNumber: 'ZB-2', manufacturer: 'HP', model: 'ZBook' },
        { serialNumber: 'SW-1', manufacturer: 'Acer', model: 'Swift' },
      ].map((p) => ({ ...p, productType: 'Laptops', specs: LAPTOP_STD, country: 'DE' }));
      expect((await admin().post('/v4/products', { companyId: t.demo.companies.globex, products })).status).toBe(201);
      const res = await admin().get(`/v4/devices/options?productType=Laptops&companyId=${t.demo.companies.globex}`);
      expect(res.body.data.options.map((o: { manufacturer: string; inStock: number; specScore: number }) => [o.manufacturer, o.inStock, o.specScore])).toEqual([
        ['HP', 2, 166],
        ['Acer', 1, 166],
        ['Lenovo', 1, 166],
      ]);
    });

    it('refuses an address of another company (404) and a country that contradicts the address (400)', async () => {
      const munich = (await admin().get(`/v4/products/${t.demo.devices.globexStockLaptop}`)).body.data.location.companyAddressId;
      const base = { serialNumber: 'ADDR-1', productType: 'Mice', manufacturer: 'Logitech', model: 'M720' };
      const foreign = await admin().post('/v4/products', { companyId: t.demo.companies.acme, products: [{ ...base, companyAddressId: munich }] });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.code).toBe('company_address_not_found');
      expect(fieldsOf(foreign)).toEqual(['products.0.companyAddressId']);
      const mismatch = await admin().post('/v4/products', { companyId: t.demo.companies.globex, products: [{ ...base, companyAddressId: munich, country: 'FR' }] });
      expect(mismatch.status).toBe(400);
      expect(fieldsOf(mismatch)).toEqual(['products.0.country']);
      expect((await admin().get('/v4/products/ADDR-1')).status).toBe(404);
    });

    it('validates the batch: size, enums, unknown fields, and the company of a multi-company admin', async () => {
      const api = admin();
      const acme = t.demo.companies.acme;
      expect((await api.post('/v4/products', { companyId: acme, products: [] })).status).toBe(400);
      const item = { serialNumber: 'X', productType: 'Mice', manufacturer: 'L', model: 'M' };
      const tooMany = await api.post('/v4/products', { companyId: acme, products: Array.from({ length: 501 }, (_, i) => ({ ...item, serialNumber: `X-${i}` })) });
      expect(tooMany.status).toBe(400);
      expect(fieldsOf(tooMany)).toEqual(['products']);
      const bad = await api.post('/v4/products', {
        companyId: acme,
        products: [{ ...item, productType: 'Toasters', condition: 'Mint', specs: { ramGb: 'lots' }, colour: 'red' }],
      });
      expect(bad.status).toBe(400);
      expect(fieldsOf(bad)).toEqual(['products.0.colour', 'products.0.condition', 'products.0.productType', 'products.0.specs.ramGb']);
      const noCompany = await api.post('/v4/products', { products: [item] });
      expect(noCompany.status).toBe(400);
      expect(noCompany.body.error.code).toBe('company_required');
    });

    it('denies managers and keys without mcp:inventory:write', async () => {
      const body = { products: [{ serialNumber: 'NO-1', productType: 'Mice', manufacturer: 'L', model: 'M' }] };
      expect((await manager().post('/v4/products', body)).status).toBe(403);
      const readOnly = await keyWith(t, 'admin', ['mcp:inventory:read']);
      expect((await client(t.app, readOnly).post('/v4/products', { ...body, companyId: t.demo.companies.acme })).status).toBe(403);
      const otherCompany = await client(t.app, globexAdminKey).post('/v4/products', { ...body, companyId: t.demo.companies.acme });
      expect(otherCompany.status).toBe(403);
      expect(otherCompany.body.error.code).toBe('company_not_accessible');
    });
  });

  describe('register_device_in_use', () => {
    it("registers a device already in an employee's hands, assigned and located in their country", async () => {
      const res = await admin().post(`/v4/employees/${t.demo.employees.noah}/devices`, {
        serialNumber: 'INUSE-1',
        productType: 'Laptops',
        manufacturer: 'Apple',
        model: 'MacBook Air 13',
        specs: { ramGb: 16, storageGb: 512, releaseYear: 2024 },
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        companyId: t.demo.companies.acme,
        status: 'Assigned',
        inStock: false,
        condition: 'Good',
        specScore: 64 + 8 + 30,
        location: { country: 'US', companyAddressId: null },
        assignment: { employeeId: t.demo.employees.noah, displayName: 'Noah Newhire' },
      });
      const held = await admin().get(`/v4/employees/${t.demo.employees.noah}/devices`);
      expect(idsOf(held)).toEqual([res.body.data.id]);
    });

    it('answers 409 when the serial is already registered in the company', async () => {
      const res = await admin().post(`/v4/employees/${t.demo.employees.dana}/devices`, {
        serialNumber: await serialOf('stockPhoneDe'),
        productType: 'Mobile',
        manufacturer: 'Samsung',
        model: 'Galaxy S24',
      });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('serial_number_taken');
      expect(fieldsOf(res)).toEqual(['serialNumber']);
    });

    it('answers 404 for an employee out of the caller’s reach or unknown', async () => {
      const body = { serialNumber: 'INUSE-2', productType: 'Mice', manufacturer: 'Logitech', model: 'M720' };
      expect((await client(t.app, globexAdminKey).post(`/v4/employees/${t.demo.employees.eve}/devices`, body)).status).toBe(404);
      expect((await admin().post('/v4/employees/emp_nope/devices', body)).status).toBe(404);
      const greta = await client(t.app, globexAdminKey).post(`/v4/employees/${t.demo.employees.greta}/devices`, body);
      expect(greta.status).toBe(201);
      expect(greta.body.data).toMatchObject({ companyId: t.demo.companies.globex, location: { country: 'DE' } });
    });

    it('rejects incomplete or unknown fields', async () => {
      const res = await admin().post(`/v4/employees/${t.demo.employees.noah}/devices`, { serialNumber: 'INUSE-3', productType: 'Mice', manufacturer: 'Logitech', status: 'Available' });
      expect(res.status).toBe(400);
      expect(fieldsOf(res)).toEqual(['model', 'status']);
    });

    it('denies managers, employees and keys without mcp:inventory:write', async () => {
      const body = { serialNumber: 'INUSE-4', productType: 'Mice', manufacturer: 'Logitech', model: 'M720' };
      expect((await manager().post(`/v4/employees/${t.demo.employees.dana}/devices`, body)).status).toBe(403);
      expect((await employee().post(`/v4/employees/${t.demo.employees.eve}/devices`, body)).status).toBe(403);
      const readOnly = await keyWith(t, 'admin', ['mcp:inventory:read']);
      expect((await client(t.app, readOnly).post(`/v4/employees/${t.demo.employees.noah}/devices`, body)).status).toBe(403);
    });
  });
});
