import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { DEMO_PASSWORD } from '../../src/domain/demo.js';
import type { MigrationReport } from '../../src/migration/migration-report.js';
import { chromiumPath, startDemoInBrowser, type DemoInBrowser, screenshotPath } from '../helpers/chromium.js';

const DAY_MS = 86_400_000;

/**
 * The dashboard as an operator meets it: the demo server started as `svc-server serve --demo`
 * (seeded with 30 days of v2 history), live traffic from scripts/v2-traffic.ts, a real chromium.
 */
describe.skipIf(!chromiumPath())('the migration dashboard in a real browser, with the demo history and live traffic', () => {
  let demo: DemoInBrowser;
  let dataDir: string;
  let baseUrl: string;
  let page: Page;

  beforeAll(async () => {
    demo = await startDemoInBrowser({ width: 1000, height: 900 });
    ({ dataDir, baseUrl, page } = demo);
  });
  afterAll(async () => demo?.close());

  const report = async (): Promise<MigrationReport> => (await page.request.get(`${baseUrl}/app/migration.json`)).json() as Promise<MigrationReport>;

  /** A key's calls summed over the days both reports show, so a run across midnight still adds up. */
  const callsSince = (before: MigrationReport, after: MigrationReport, name: string) => {
    const [was, is] = [before, after].map((r) => r.keys.find((key) => key.name === name)!);
    return after.days.reduce((sum, day, i) => {
      const j = before.days.indexOf(day);
      return sum + is!.callsPerDay[i]! - (j < 0 ? 0 : was!.callsPerDay[j]!);
    }, 0);
  };

  it('signs in as the demo admin, counts the script’s calls, and renders chart, tables and days to sunset', async () => {
    await page.goto(`${baseUrl}/app/migration`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/app/sign-in');
    await page.getByLabel('Email').fill('admin@demo.example');
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}/app/migration`);

    const before = await report();
    // The seeded history: thirty days for both demo companies.
    expect(before.days).toHaveLength(30);
    expect(before.companies.map((c) => c.name)).toEqual(['Acme Corp', 'Globex GmbH']);
    const traffic = await new Promise<{ calls: { full: number; addressOnly: number } }>((resolve, reject) => {
      // Compiled by global-setup with the rest of the tree: a plain node start.
      const args = ['dist/scripts/v2-traffic.js', '--url', baseUrl, '--seconds', '2', '--keys-file', join(dataDir, 'demo-keys.json'), '--json'];
      execFile(process.execPath, args, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as { calls: { full: number; addressOnly: number } }),
      );
    });
    expect(traffic.calls.full).toBeGreaterThan(0);
    expect(traffic.calls.addressOnly).toBeGreaterThan(0);
    const after = await report();
    expect(callsSince(before, after, 'Demo v2 integration (full)')).toBe(traffic.calls.full);
    expect(callsSince(before, after, 'Demo v2 address sync')).toBe(traffic.calls.addressOnly);

    await page.reload();
    const chart = page.getByRole('img', { name: /v2 calls per day, by company/ });
    expect(await chart.isVisible()).toBe(true);
    expect(await page.locator('#company-traffic polyline').count()).toBe(2);
    const legend = page.getByRole('list', { name: 'Legend' });
    expect(await legend.getByRole('listitem').allTextContents()).toEqual([' Acme Corp', ' Globex GmbH']);

    const keys = page.locator('#keys');
    for (const name of ['Demo v2 integration (full)', 'Demo v2 address sync', 'Globex HR export (retired)']) {
      expect(await keys.getByRole('row', { name: new RegExp(name.replace(/[()]/g, '\\$&')) }).count()).toBe(1);
      expect(await keys.getByRole('img', { name: new RegExp(`^${name.replace(/[()]/g, '\\$&')}: calls per day`) }).isVisible()).toBe(true);
    }
    const endpoints = await page.locator('#endpoints tbody td:first-child').allTextContents();
    expect(endpoints).toEqual(expect.arrayContaining(['GET /employees', 'GET /employees/:id', 'GET /employees/:id/deliveryAddress', 'GET /catalogs', 'GET /company']));
    expect(await page.locator('#no-successor tbody td:first-child').allTextContents()).toEqual(expect.arrayContaining(['api.catalogs.getAll', 'api.company.get']));
    const quiet = after.keys.find((key) => key.quiet)!;
    expect(quiet.name).toBe('Globex HR export (retired)');
    expect(await page.locator('#quiet-keys tbody td code').allTextContents()).toEqual([`svc legacy-keys disable ${quiet.id} --force --reason 'quiet, and its integration is gone'`]);

    const daysLeft = Math.max(0, Math.ceil((Date.parse(after.sunset.at) - Date.now()) / DAY_MS));
    expect(await page.getByTestId('days-to-sunset').textContent()).toBe(String(daysLeft));
    await page.screenshot({ path: screenshotPath('migration-dashboard.png'), fullPage: true });
  });
});
