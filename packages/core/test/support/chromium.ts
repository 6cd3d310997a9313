import { type Browser, chromium } from 'playwright-core';

/** The system Chromium (`CHROMIUM_PATH` overrides); playwright downloads no browser here. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium for page tests, with the flags every browser suite here uses: no sandbox (CI
 * runs as root), no GPU, and none of the background traffic a first run would start.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
