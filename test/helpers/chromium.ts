import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { ServerProcess } from './server-process.js';

/**
 * Where a page test saves a screenshot: docs/screenshots/ when refreshing them
 * (UPDATE_SCREENSHOTS=1), else a temporary directory, so that a test run leaves the checkout clean.
 */
export function screenshotPath(name: string): string {
  const dir = process.env.UPDATE_SCREENSHOTS === '1' ? 'docs/screenshots' : (screenshotDir ??= mkdtempSync(join(tmpdir(), 'svc-screenshots-')));
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
let screenshotDir: string | undefined;

/** Debian's chromium found by the global setup, or '' where the page tests cannot run here. */
export const chromiumPath = () => inject('chromiumPath');

/** Headless chromium for the page tests: no sandbox (containers), no GPU, no background traffic. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** The demo as a person meets it: `svc-server serve --demo` on its own data dir and port, and a chromium page. */
export interface DemoInBrowser {
  baseUrl: string;
  /** The server's data dir (its demo-keys.json among others). */
  dataDir: string;
  page: Page;
  close(): Promise<void>;
}

export async function startDemoInBrowser(viewport: { width: number; height: number }): Promise<DemoInBrowser> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-browser-demo-'));
  const env = { LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    server = await ServerProcess.start(['--demo'], env, { startupMs: 50_000 });
    browser = await launchChromium();
    return { baseUrl: server.summary.url, dataDir, page: await browser.newPage({ viewport }), close };
  } catch (error) {
    await close();
    throw error;
  }
}
