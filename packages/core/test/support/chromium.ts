import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { describe, it } from 'vitest';

/** The system Chromium (`CHROMIUM_PATH` overrides); playwright downloads no browser here. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether this machine has the browser. `pnpm test` installs one when it may; where none could be
 * installed the browser suites are skipped (and counted as skipped), never failed.
 */
export const HAS_CHROMIUM = existsSync(CHROMIUM_PATH);
/** `describe` for tests that drive the browser: skipped without one. */
export function describeInBrowser(name: string, body: () => void): void {
  describe.skipIf(!HAS_CHROMIUM)(name, body);
}

/** `it` for a test that drives the browser: skipped without one. */
export function itInBrowser(name: string, body: () => Promise<void>, timeoutMs?: number): void {
  it.skipIf(!HAS_CHROMIUM)(name, body, timeoutMs);
}

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

/** A fresh browser context that sends `cookie` (`name=value`, a session) to `url`'s site. */
export async function contextWithCookie(
  browser: Browser,
  url: string,
  cookie: string,
): Promise<BrowserContext> {
  const context = await browser.newContext();
  await addCookie(context, url, cookie);
  return context;
}

/** Gives `context` a `name=value` cookie (as a `Set-Cookie`'s first part) for `url`. */
export async function addCookie(context: BrowserContext, url: string, cookie: string): Promise<void> {
  const at = cookie.indexOf('=');
  await context.addCookies([{ name: cookie.slice(0, at), value: cookie.slice(at + 1), url }]);
}
