import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { DEMO_PASSWORD } from '../../src/domain/demo.js';
import { chromiumPath, startDemoInBrowser, type DemoInBrowser, screenshotPath } from '../helpers/chromium.js';

const FULL_KEY = 'Demo v2 integration (full)';

/**
 * The integration owner's way through the pages, in a real chromium against `svc-server serve --demo`:
 * from the migration dashboard to the guide, and to one key's migration plan.
 */
describe.skipIf(!chromiumPath())('the migration guide and a key’s plan, opened from the dashboard in a real browser', () => {
  let demo: DemoInBrowser;
  let baseUrl: string;
  let page: Page;

  beforeAll(async () => {
    demo = await startDemoInBrowser({ width: 1100, height: 900 });
    ({ baseUrl, page } = demo);

    await page.goto(`${baseUrl}/app/migration`);
    await page.getByLabel('Email').fill('admin@demo.example');
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}/app/migration`);
  });
  afterAll(async () => demo?.close());

  it('follows the dashboard’s link to the migration guide', async () => {
    await page.goto(`${baseUrl}/app/migration`);
    await page.getByRole('link', { name: 'the migration guide' }).click();
    await page.waitForURL(`${baseUrl}/docs/migration`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Migrating from API v2 to v4');
    expect(await page.getByRole('heading', { name: 'Every v2 endpoint' }).isVisible()).toBe(true);
    const section = page.locator('#get-employees');
    expect(await section.getByRole('heading', { name: 'GET /v2/employees' }).isVisible()).toBe(true);
    expect(await section.textContent()).toContain('GET /v4/employees');
    expect(await page.locator('#get-catalogs').textContent()).toContain('No v4 successor');
    // The whole guide is long: the shot shows its table of every endpoint.
    await page.locator('#endpoints').evaluate((table) => table.scrollIntoView());
    await page.screenshot({ path: screenshotPath('migration-guide.png') });
  });

  it('follows a key’s link to its migration plan: endpoints by volume, what stays on v2, the checklist', async () => {
    await page.goto(`${baseUrl}/app/migration`);
    const row = page.locator('#cutover tbody tr', { hasText: FULL_KEY });
    await row.getByRole('link', { name: 'Migration plan' }).click();
    await page.waitForURL(/\/app\/migration\/keys\/lk_\w+\/plan$/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Migration plan: ${FULL_KEY}`);

    const calls = (await page.locator('#plan-endpoints tbody td:nth-child(2)').allTextContents()).map((text) => Number(text.replace(/,/g, '')));
    expect(calls.length).toBeGreaterThan(1);
    expect(calls).toEqual([...calls].sort((a, b) => b - a));
    expect(await page.locator('#plan-endpoints tbody td:first-child').allTextContents()).toEqual(expect.arrayContaining(['GET /v2/employees']));
    expect(await page.locator('#plan-stays tbody td:first-child').allTextContents()).toEqual(expect.arrayContaining(['GET /v2/catalogs']));
    const steps = page.locator('#plan-steps');
    expect(await steps.isVisible()).toBe(true);
    expect(await steps.textContent()).toMatch(/svc legacy-keys mint-successor lk_\w+ --capabilities /);

    // The guide link of the busiest endpoint opens its section.
    const first = page.locator('#plan-endpoints tbody tr').first().getByRole('link');
    expect(await first.getAttribute('href')).toMatch(/^\/docs\/migration#[a-z0-9-]+$/);
    await page.screenshot({ path: screenshotPath('migration-plan.png'), fullPage: true });
  });
});
