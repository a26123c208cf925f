import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium, never a downloaded browser (.ci/run installs it when missing). */
const CHROMIUM = '/usr/bin/chromium';

/** Headless chromium for the page tests: no sandbox (containers), no GPU, no background traffic. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
