import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { untilHealthy } from './healthz.js';
import { freePort } from './ports.js';

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
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve', '--demo', '--port', String(port)], { env, stdio: 'ignore' });
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    if (!(await untilHealthy(baseUrl, server, { timeoutMs: 50_000, intervalMs: 250 }))) {
      throw new Error(`the demo server did not start (exit code ${server.exitCode})`);
    }
    browser = await launchChromium();
    return { baseUrl, dataDir, page: await browser.newPage({ viewport }), close };
  } catch (error) {
    await close();
    throw error;
  }
}
