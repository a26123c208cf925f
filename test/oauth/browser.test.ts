import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { authorizationRequest, discoverAndRegister, DEMO_PASSWORD } from './support.js';
import { chromiumPath, launchChromium, screenshotPath } from '../helpers/chromium.js';
import { startListeningApp, type ListeningTestApp } from '../helpers/harness.js';


describe.skipIf(!chromiumPath())('a real browser on the sign-in, consent, keys and connections pages', () => {
  let s: ListeningTestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    s = await startListeningApp('pglite');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  });
  afterAll(async () => {
    await browser?.close();
    await s.close();
  });

  it('signs in, sees the consent screen, grants read-only and gets the redirect', async () => {
    const registered = await discoverAndRegister(s.baseUrl, 'http://127.0.0.1:53682/callback');
    // The MCP client's loopback listener: the browser lands here with the code.
    await page.route('http://127.0.0.1:53682/**', (route) => route.fulfill({ contentType: 'text/plain', body: 'authorized' }));
    const request = await authorizationRequest(registered, s.mcpUrl, 'mcp:orders:read mcp:orders:write mcp:employees:read mcp:employees:write');

    await page.goto(request.url);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/app/sign-in');
    await page.getByLabel('Email').fill('admin@demo.example');
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    expect(await page.getByText('Unverified application').isVisible()).toBe(true);
    expect(await page.getByTestId('redirect-host').textContent()).toBe('127.0.0.1:53682');
    expect(await page.getByText('Unlocks: list_orders').isVisible()).toBe(true);
    await page.screenshot({ path: screenshotPath('consent-screen.png'), fullPage: true });

    // Read-only: reads ticked, writes not.
    await page.getByRole('checkbox', { name: /Read orders/ }).check();
    await page.getByRole('checkbox', { name: /Read employees/ }).check();
    await page.getByRole('checkbox', { name: /Create orders/ }).uncheck();
    await page.getByRole('checkbox', { name: /Create and update employees/ }).uncheck();
    await page.getByRole('button', { name: 'Allow selected' }).click();
    await page.waitForURL('http://127.0.0.1:53682/**');
    const callback = new URL(page.url());
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(callback.searchParams.get('state')).toBe(request.state);
  });

  it('mints an API key on the keys page and sees it once', async () => {
    await page.goto(`${s.baseUrl}/app/developers/api-keys`);
    await page.getByLabel('Name').fill('Reporting export');
    await page.getByRole('checkbox', { name: /Read orders/ }).check();
    await page.getByRole('checkbox', { name: /Read inventory/ }).check();
    await page.getByRole('button', { name: 'Mint key' }).click();
    const rawKey = await page.getByTestId('raw-key').textContent();
    expect(rawKey).toMatch(/^svc_sk_[0-9a-z]{8}_[A-Za-z0-9_-]{43}$/);
    await page.screenshot({ path: screenshotPath('api-keys.png'), fullPage: true });
    expect(await page.getByRole('row', { name: /Reporting export/ }).getByText('mcp:inventory:read').isVisible()).toBe(true);

    await page.goto(`${s.baseUrl}/app/developers/api-keys`);
    expect(await page.getByTestId('raw-key').count()).toBe(0);
    expect(await page.content()).not.toContain(rawKey!);
  });

  it('narrows and then disconnects the connection', async () => {
    await page.goto(`${s.baseUrl}/app/connections`);
    const connection = page.getByRole('region', { name: 'Test MCP client' });
    expect(await connection.getByRole('checkbox').count()).toBe(2);
    await connection.getByRole('checkbox', { name: /Read employees/ }).uncheck();
    await connection.getByRole('button', { name: 'Save permissions' }).click();
    await page.waitForURL(`${s.baseUrl}/app/connections`);
    expect(await page.getByRole('region', { name: 'Test MCP client' }).getByRole('checkbox').count()).toBe(1);

    await page.getByRole('button', { name: 'Disconnect Test MCP client' }).click();
    await page.waitForURL(`${s.baseUrl}/app/connections`);
    expect(await page.getByRole('region', { name: 'Test MCP client' }).count()).toBe(0);
    expect(await page.getByText('No MCP client is connected').isVisible()).toBe(true);
  });
});
