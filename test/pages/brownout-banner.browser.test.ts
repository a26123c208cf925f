import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { DEMO_PASSWORD } from '../../src/domain/demo.js';
import { createLegacyKey } from '../../src/legacy/legacy-keys.js';
import { chromiumPath, launchChromium, screenshotPath } from '../helpers/chromium.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';

/*
 * The brownout banner as an admin sees it in a real browser, on the dashboard and on a key's plan,
 * during the shipped first window (2026-12-01 14:00–17:00 UTC): the core's clock is set inside it, so
 * the pages and the v2 answers read the same moment. The screenshots are the docs' (UPDATE_SCREENSHOTS=1).
 */

const DURING_FIRST_WINDOW = new Date('2026-12-01T15:30:00Z');

describe.skipIf(!chromiumPath())('the brownout banner in a real browser', () => {
  let s: ListeningTestApp;
  let browser: Browser;
  let page: Page;
  let keyId: string;

  beforeAll(async () => {
    s = await startListeningApp('pglite', { core: { now: () => DURING_FIRST_WINDOW } });
    keyId = (await createLegacyKey(s.core, s.core.mappings, { companyId: s.demo.companies.acme, name: 'HR sync', scopes: ['api.employees.getAll'] })).id;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    await page.goto(`${s.baseUrl}/app/sign-in`);
    await page.getByLabel('Email').fill(s.demo.emails.admin);
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname !== '/app/sign-in');
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('heads the dashboard with the window now in force and when it ends', async () => {
    await page.goto(`${s.baseUrl}/app/migration`);
    const banner = page.getByTestId('brownout-banner');
    expect(await banner.getAttribute('data-brownout')).toBe('active');
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.textContent()).toMatch(/Brownout now\..*17:00/);
    await page.screenshot({ path: screenshotPath('migration-dashboard-brownout.png'), fullPage: false });
  });

  it('heads a key’s plan with the same banner', async () => {
    await page.goto(`${s.baseUrl}/app/migration/keys/${keyId}/plan`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Migration plan: HR sync');
    expect(await page.getByTestId('brownout-banner').getAttribute('data-brownout')).toBe('active');
    await page.screenshot({ path: screenshotPath('migration-plan-brownout.png'), fullPage: true });
  });
});
