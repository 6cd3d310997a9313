/**
 * What every dashboard browser test needs: the dashboard's script built, a browser signed in
 * through the development IdP by clicking, an accessibility check with axe-core, and a screenshot
 * of each page written as a test artifact.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { RunningPlatform } from '../support/platform.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const DASHBOARD = join(ROOT, 'packages/dashboard');

/** Where the pages' screenshots go (`docs/dashboard.md` shows them). */
export const SCREENSHOTS = join(ROOT, 'test-results/dashboard');

/** Builds the dashboard's script and stylesheet when this checkout has not yet (`pnpm build` does). */
export function ensureDashboardBuilt(): void {
  if (existsSync(join(DASHBOARD, 'dist/dashboard.js'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/tsup/dist/cli-default.js')], {
    cwd: DASHBOARD,
    stdio: 'ignore',
  });
}

/**
 * Opens the dashboard signed out and signs `email` in by clicking, as a person would: the home
 * page sends them to sign in, the development IdP's form brings them back.
 */
export async function signInByClicking(page: Page, server: RunningPlatform, email: string): Promise<void> {
  await page.goto(`${server.url}/`);
  await page.waitForURL(/\/sign-in\?/);
  await Promise.all([
    page.waitForURL(/\/auth\/v1\/sign-in/),
    page.getByRole('link', { name: 'Sign in' }).click(),
  ]);
  await page.fill('#email', email);
  await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
  await page.waitForSelector('html[data-ready="true"]');
}

/**
 * Posts a dashboard form as the browser sends it from the dashboard's own pages: the session
 * cookie, the dashboard's origin, an urlencoded body. Redirects are answers to read, not followed.
 */
export function postForm(
  baseUrl: string,
  cookie: string,
  path: string,
  fields: Record<string, string> | string | Uint8Array<ArrayBuffer>,
): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, origin: baseUrl, 'content-type': 'application/x-www-form-urlencoded' },
    body:
      typeof fields === 'string' || fields instanceof Uint8Array
        ? fields
        : new URLSearchParams(fields).toString(),
  });
}

/** No axe-core violation on the page as it is now (WCAG 2.1 A and AA rules). */
export async function expectAccessible(page: Page): Promise<void> {
  // Evaluated through the debugging protocol, which the page's CSP does not govern.
  const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(options: unknown): Promise<{ violations: { id: string; nodes: { target: unknown }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      targets: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
  expect(JSON.stringify(violations)).toBe('[]');
}

/** Writes the page as `test-results/dashboard/<name>.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Page errors and CSP refusals the browser reports: a dashboard page must cause none. */
export function collectPageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
  });
  return problems;
}
