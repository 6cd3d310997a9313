/**
 * The whole login in headless Chromium: `service login` waits on its loopback port, the browser
 * signs in with the development IdP, clicks issue, and the CLI writes its config; then `whoami`,
 * `logout`, a second login revoking the first key, refused bodies and the timer.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { PassThrough } from 'node:stream';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../../core/src/billing/ledger.js';
import { deliveredLogin, formFields, signIn } from '../../core/test/cli/support.js';
import { describeInBrowser, HAS_CHROMIUM, launchChromium } from '../../core/test/support/chromium.js';
import { type RunningPlatform, startPlatform } from '../../core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';
import { LOGIN_TIMEOUT_MS } from '../src/commands/login.js';
import { run } from '../src/index.js';
import type { CliIo } from '../src/io.js';
import { createTestIo, type TestIo, writeConfigFile } from './support/io.js';

let store: TestStore;
let running: RunningPlatform;
let browser: Browser;
const ios: TestIo[] = [];

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await running?.close();
  await store?.dispose();
});
afterEach(async () => {
  await Promise.all(ios.splice(0).map((io) => io.dispose()));
});

async function newIo(overrides: Partial<CliIo> = {}): Promise<TestIo> {
  const io = await createTestIo(overrides);
  ios.push(io);
  return io;
}

/** Starts `service login` and resolves the URL it asks the browser to open. */
function startLogin(io: TestIo, args: string[] = ['--api-base', running.url]) {
  let announce!: (url: string) => void;
  const url = new Promise<string>((resolve) => {
    announce = resolve;
  });
  io.openUrl = async (target) => {
    io.opened.push(target);
    announce(target);
    return true;
  };
  return { exit: run(['login', ...args], io), url };
}

/** The browser part: open the URL, sign in with the development IdP, click issue. */
async function signInAndIssue(url: string, email: string): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(url);
    // Signed out: the bootstrap page sent us to the development sign-in.
    expect(new URL(page.url()).pathname).toBe('/auth/v1/sign-in');
    await page.fill('#email', email);
    await Promise.all([page.waitForURL(/\/dev\/cli-bootstrap\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#email')).toBe(email.toLowerCase());
    await page.click('#issue');
    await page.waitForSelector('body[data-state]');
    const state = await page.getAttribute('body', 'data-state');
    return `${state}: ${await page.textContent('#status')}`;
  } finally {
    await context.close();
  }
}

const cliBalance = (key: string) =>
  fetch(`${running.url}/api/cli/balance`, { headers: { authorization: `Bearer ${key}` } });

async function readConfigOf(io: TestIo) {
  return JSON.parse(await readFile(`${io.home}/.service/config.json`, 'utf8'));
}

describeInBrowser('service login in a browser', () => {
  it('waits, receives the key from the page, and writes the config with modes 0600/0700', async () => {
    const io = await newIo();
    const { exit, url } = startLogin(io);
    const target = await url;
    expect(target).toMatch(
      new RegExp(
        `^${running.url}/dev/cli-bootstrap\\?cb=http%3A%2F%2F127\\.0\\.0\\.1%3A\\d+%2Fdone&mode=personal-key$`,
      ),
    );

    expect(await signInAndIssue(target, 'Login@Example.test')).toBe(
      'delivered: Done: your terminal is logged in. You can close this tab.',
    );
    expect(await exit).toBe(0);
    expect(io.out()).toContain(`Opened your browser. If it did not open, visit:\n\n  ${target}\n`);
    expect(io.out()).toContain('Logged in as login@example.test');

    const config = await readConfigOf(io);
    const user = await store.db
      .selectFrom('users')
      .select('default_tenant_id')
      .where('email', '=', 'login@example.test')
      .executeTakeFirstOrThrow();
    expect(config).toEqual({
      apiBase: running.url,
      apiKey: expect.stringMatching(/^service_sk_[\w-]{43}$/),
      tenantId: user.default_tenant_id,
      appId: null,
      issuedToEmail: 'login@example.test',
      issuedAt: expect.stringMatching(/Z$/),
    });
    expect((await stat(`${io.home}/.service/config.json`)).mode & 0o777).toBe(0o600);
    expect((await stat(`${io.home}/.service`)).mode & 0o777).toBe(0o700);
    expect((await cliBalance(config.apiKey)).status).toBe(200);

    // whoami shows the account, the tenant and the credit balance.
    await post(store.db, {
      tenantId: config.tenantId,
      amountMicros: 12_340_000,
      kind: 'grant',
      idempotencyKey: 'login-test-credit',
    });
    const whoami = await newIo({ env: { HOME: io.home, NO_COLOR: '1' } });
    expect(await run(['whoami'], whoami)).toBe(0);
    expect(whoami.out()).toContain('Account  login@example.test');
    expect(whoami.out()).toMatch(/Tenant {3}Login's workspace|Tenant {3}login's workspace/);
    expect(whoami.out()).toContain('Balance  USD 12.34');
    // The key as a recognisable prefix and its last four characters, never more.
    const shown = `service_sk_…${config.apiKey.slice(-4)}`;
    expect(io.out()).toContain(`Key ${shown} stored in`);
    expect(whoami.out()).toContain(`Key      ${shown} (cli)`);
    const json = await newIo({ env: { HOME: io.home } });
    // Global flags are read anywhere on the line.
    expect(await run(['--json', 'whoami'], json)).toBe(0);
    expect(JSON.parse(json.out())).toMatchObject({
      email: 'login@example.test',
      tenantId: config.tenantId,
      balanceUsd: 12.34,
      key: shown,
      keyKind: 'cli',
    });
    expect(json.out()).not.toContain(config.apiKey);

    // logout revokes the key (it then gets 401) and removes the file.
    const logout = await newIo({ env: { HOME: io.home } });
    expect(await run(['logout'], logout)).toBe(0);
    expect(logout.out()).toContain('Logged out');
    expect((await cliBalance(config.apiKey)).status).toBe(401);
    // The file is gone, as the CLI contract says.
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
    const after = await newIo({ env: { HOME: io.home } });
    expect(await run(['whoami'], after)).toBe(1);
    expect(after.err()).toBe('Not logged in. Run service login first.\n');
  });

  it('revokes the previous CLI key on a second login', async () => {
    const first = await newIo();
    const one = startLogin(first);
    await signInAndIssue(await one.url, 'again@example.test');
    expect(await one.exit).toBe(0);
    const firstKey = (await readConfigOf(first)).apiKey;

    // Same machine, later: the stored apiBase is reused without --api-base.
    const second = await newIo({ env: { HOME: first.home, NO_COLOR: '1' } });
    const two = startLogin(second, []);
    expect(await two.url).toMatch(new RegExp(`^${running.url}/dev/cli-bootstrap`));
    await signInAndIssue(await two.url, 'again@example.test');
    expect(await two.exit).toBe(0);
    const secondKey = (await readConfigOf(first)).apiKey;

    expect(secondKey).not.toBe(firstKey);
    expect((await cliBalance(firstKey)).status).toBe(401);
    expect((await cliBalance(secondKey)).status).toBe(200);
  });
});

describe('the loopback listener', () => {
  it('answers the preflight only for apiBase, and rejects bodies missing apiKey or tenantId', async () => {
    const io = await newIo({ loginTimeoutMs: 60_000 });
    const { exit, url } = startLogin(io);
    const callback = new URL(await url).searchParams.get('cb')!;

    const preflight = await fetch(callback, {
      method: 'OPTIONS',
      headers: {
        origin: running.url,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
        'access-control-request-private-network': 'true',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(running.url);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST');
    expect(preflight.headers.get('access-control-allow-private-network')).toBe('true');
    const foreign = await fetch(callback, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();

    const send = (body: unknown, origin = running.url) =>
      fetch(callback, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const noKey = await send({ tenantId: 't-1', email: 'x@example.test' });
    expect(noKey.status).toBe(400);
    expect(await noKey.json()).toEqual({ error: 'Body must carry apiKey (a service_sk_ key)' });
    // A key is the prefix and 43 base64url characters, not the prefix alone.
    for (const apiKey of ['service_sk_', `service_sk_${'a'.repeat(42)}`, `service_sk_${'a'.repeat(42)}!`]) {
      const short = await send({ apiKey, tenantId: 't-1' });
      expect(short.status).toBe(400);
      expect(await short.json()).toEqual({ error: 'Body must carry apiKey (a service_sk_ key)' });
    }
    const noTenant = await send({ apiKey: `service_sk_${'a'.repeat(43)}` });
    expect(noTenant.status).toBe(400);
    expect(await noTenant.json()).toEqual({ error: 'Body must carry tenantId' });
    expect((await send('{oops')).status).toBe(400);
    expect(
      (await send({ apiKey: `service_sk_${'a'.repeat(43)}`, tenantId: 't' }, 'https://evil.example')).status,
    ).toBe(403);
    // Nothing was accepted: the CLI still waits, and nothing was written.
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);

    // Text from the post is printed with its control characters neutralised.
    const accepted = await send({
      apiKey: `service_sk_${'a'.repeat(43)}`,
      tenantId: 't-1\u001b[2J',
      appId: null,
      email: '\u001b]0;pwned\u0007x@example.test',
    });
    expect(accepted.status).toBe(200);
    expect(await exit).toBe(0);
    expect(io.out()).toContain('Logged in as \ufffd]0;pwned\ufffdx@example.test (tenant t-1\ufffd[2J).');
    expect(io.out()).not.toContain('\u001b');
    expect(await readConfigOf(io)).toMatchObject({
      apiKey: `service_sk_${'a'.repeat(43)}`,
      tenantId: 't-1\u001b[2J',
    });
  });

  it("waits the contract's five minutes for the browser unless told otherwise", () => {
    expect(LOGIN_TIMEOUT_MS).toBe(5 * 60_000);
  });

  it('ends the wait with a clear message when the timer runs out', async () => {
    const io = await newIo({ loginTimeoutMs: 300 });
    const { exit, url } = startLogin(io);
    const callback = new URL(await url).searchParams.get('cb')!;
    expect(await exit).toBe(1);
    expect(io.err()).toBe('Login timed out: no key arrived within 300 ms. Run service login to try again.\n');
    // The listener is gone.
    await expect(fetch(callback, { method: 'POST', headers: { origin: running.url } })).rejects.toThrow();
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
  });

  it('prints the URL when no browser can open', async () => {
    const io = await newIo({ loginTimeoutMs: 200 });
    expect(await run(['login', '--api-base', running.url, '--no-browser'], io)).toBe(1);
    expect(io.opened).toEqual([]);
    expect(io.out()).toMatch(
      /Open this URL in your browser to log in:\n\n {2}http:\/\/127\.0\.0\.1:\d+\/dev\/cli-bootstrap\?cb=/,
    );
  });

  it('accepts the login code pasted from the page, unechoed, when the browser cannot reach the terminal', async () => {
    const io = await newIo({ loginTimeoutMs: 60_000 });
    // A terminal: echo goes off (raw mode) while the code is read, and comes back after.
    const rawModes: boolean[] = [];
    Object.assign(io.stdin, { isTTY: true, setRawMode: (mode: boolean) => rawModes.push(mode) });
    const { exit, url } = startLogin(io);
    const target = new URL(await url);
    // The page was opened elsewhere (another machine): it could not post, so it shows the code.
    const session = await signIn(running, 'paste@example.test');
    const consent = await fetch(`${running.url}${target.pathname}${target.search}`, {
      headers: { cookie: session.cookie },
    });
    const delivery = await fetch(`${running.url}/dev/cli-bootstrap`, {
      method: 'POST',
      headers: {
        cookie: session.cookie,
        origin: running.url,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(formFields(await consent.text())),
    });
    const { code, payload } = deliveredLogin(await delivery.text());
    const stdin = io.stdin as PassThrough;
    // Raw mode: Enter arrives as a carriage return; a typo is corrected with backspace.
    stdin.write('not a code\r');
    stdin.write(`${code}x\u007f\r`);
    expect(await exit).toBe(0);
    expect(rawModes).toEqual([true, false]);
    expect(io.out()).toContain('paste the login code the page shows (it is not echoed)');
    expect(io.out()).not.toContain(code);
    expect(io.err()).toContain('That is not a login code.');
    expect(await readConfigOf(io)).toMatchObject({
      apiKey: payload.apiKey,
      issuedToEmail: 'paste@example.test',
    });
    expect((await cliBalance(payload.apiKey)).status).toBe(200);
  });

  it('accepts, pasted where it asks for the login code, a CLI key made on the dashboard, once the platform vouches for it', async () => {
    const session = await signIn(running, 'dashboard-key@example.test');
    const made = await fetch(`${running.url}/api/keys`, {
      method: 'POST',
      headers: { cookie: session.cookie, origin: running.url, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'cli', name: 'pasted' }),
    });
    expect(made.status).toBe(201);
    const { apiKey } = (await made.json()) as { apiKey: string };
    const io = await newIo({ loginTimeoutMs: 60_000 });
    Object.assign(io.stdin, { isTTY: true, setRawMode: () => {} });
    const exit = run(['login', '--api-base', running.url, '--no-browser'], io);
    const stdin = io.stdin as PassThrough;
    // A whole key the platform does not know is refused and the wait goes on; a part of one is no key.
    const unknown = `service_sk_${'A'.repeat(43)}`;
    stdin.write(`${unknown}\r`);
    await expect.poll(() => io.err()).toContain('refused that key');
    stdin.write(`${apiKey.slice(0, -1)}\r`);
    await expect.poll(() => io.err()).toContain('That is not a login code.');
    stdin.write(`${apiKey}\r`);
    expect(await exit).toBe(0);
    expect(io.out()).toContain("or a CLI key made on the dashboard's Keys page");
    expect(io.out()).toContain('Logged in as dashboard-key@example.test');
    for (const shown of [io.out(), io.err()]) {
      expect(shown).not.toContain(apiKey);
      expect(shown).not.toContain(unknown);
    }
    const config = await readConfigOf(io);
    expect(config).toMatchObject({ apiBase: running.url, apiKey, appId: null, issuedToEmail: session.email });
    const who = await fetch(`${running.url}/api/cli/whoami`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(config.tenantId).toBe(((await who.json()) as { tenant: { id: string } }).tenant.id);
    // The stored key is the CLI's now: whoami is answered with it.
    expect(await run(['whoami'], io)).toBe(0);
    expect(io.out()).toMatch(/dashboard-key@example\.test[\s\S]*dashboard-key@example\.test/);
  });

  it('checks a pasted key as every command calls the platform: rate limiting says when to try again, and a silent platform is given up on in seconds', async () => {
    // A platform whose /healthz answers but whose whoami limits one key and never answers another.
    const limited = `service_sk_${'L'.repeat(43)}`;
    const other = createServer((req, res) => {
      if (req.url === '/healthz') return void res.writeHead(200).end('ok');
      if (req.headers.authorization === `Bearer ${limited}`) {
        return void res
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
          .end('{"message":"Rate limit exceeded"}');
      }
      // Silent: the check's own timer ends the wait.
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      const io = await newIo({ loginTimeoutMs: 60_000 });
      Object.assign(io.stdin, { isTTY: true, setRawMode: () => {} });
      const exit = run(['login', '--api-base', url, '--no-browser'], io);
      const stdin = io.stdin as PassThrough;
      stdin.write(`${limited}\r`);
      await expect
        .poll(() => io.err())
        .toContain('The platform is limiting requests from here (Rate limit exceeded). Try again in 7 s.');
      const started = Date.now();
      stdin.write(`service_sk_${'S'.repeat(43)}\r`);
      await expect
        .poll(() => io.err(), { timeout: 10_000 })
        .toContain(`Could not reach ${url}: no answer in time`);
      // The pasted key's check waits 5 s, not the 30 s a command waits.
      expect(Date.now() - started).toBeLessThan(10_000);
      stdin.write('\u0003');
      expect(await exit).toBe(130);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('prints the result as one JSON object with --json, the instructions on stderr', async () => {
    const io = await newIo({ loginTimeoutMs: 60_000 });
    const { exit, url } = startLogin(io, ['--api-base', running.url, '--json']);
    const target = new URL(await url);
    const session = await signIn(running, 'json@example.test');
    const consent = await fetch(`${running.url}${target.pathname}${target.search}`, {
      headers: { cookie: session.cookie },
    });
    const delivery = await fetch(`${running.url}/dev/cli-bootstrap`, {
      method: 'POST',
      headers: {
        cookie: session.cookie,
        origin: running.url,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(formFields(await consent.text())),
    });
    const { payload } = deliveredLogin(await delivery.text());
    const posted = await fetch(target.searchParams.get('cb')!, {
      method: 'POST',
      headers: { origin: running.url, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    expect(posted.status).toBe(200);
    expect(await exit).toBe(0);
    expect(JSON.parse(io.out())).toEqual({
      email: 'json@example.test',
      tenantId: payload.tenantId,
      apiBase: running.url,
      key: `service_sk_…${payload.apiKey.slice(-4)}`,
      configPath: `${io.home}/.service/config.json`,
    });
    expect(io.err()).toContain('Waiting for the browser');
  });

  it('fails at once when --api-base does not reach a platform, instead of waiting for a browser', async () => {
    const dead = await newIo();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const started = Date.now();
    expect(await run(['login', '--api-base', `http://127.0.0.1:${port}`], dead)).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(dead.err()).toMatch(/^Could not reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)\. Check the URL/);
    expect(dead.opened).toEqual([]);

    // Some other web server: it answers, but not as the platform.
    const other = createServer((_req, res) => res.writeHead(404).end('Not found'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const io = await newIo();
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      expect(await run(['login', '--api-base', url, '--json'], io)).toBe(1);
      expect(JSON.parse(io.out())).toEqual({
        error: {
          message: `${url} does not answer like the platform (GET /healthz: 404). Check the URL, or pass --api-base <url>.`,
          exitCode: 1,
        },
      });
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('logs in again to the platform of the stored login when no --api-base is given', async () => {
    const io = await newIo({ loginTimeoutMs: 300 });
    // Read as --api-base is: a trailing slash edited in is not doubled in the paths.
    const stored = { apiBase: `${running.url}/`, apiKey: `service_sk_${'s'.repeat(43)}`, tenantId: 't-1' };
    await writeConfigFile(io, stored);
    const { exit, url } = startLogin(io, []);
    expect(await url).toMatch(new RegExp(`^${running.url}/dev/cli-bootstrap\\?`));
    expect(await exit).toBe(1);
    expect(io.err()).toMatch(/^Login timed out/);
  });

  it('names the config file when its stored apiBase breaks the --api-base rule', async () => {
    for (const [apiBase, problem] of [
      ['ftp://x', 'is not https://'],
      ['http://platform.example', 'is not https://'],
      ['not a url', 'is not a URL'],
      ['https://user:pw@platform.example', 'carries credentials, a query or a fragment'],
    ] as const) {
      const io = await newIo();
      await writeConfigFile(io, { apiBase, apiKey: `service_sk_${'s'.repeat(43)}`, tenantId: 't-1' });
      expect(await run(['login'], io), apiBase).toBe(1);
      expect(io.err()).toMatch(/^\/\S+\/\.service\/config\.json has an apiBase that /);
      expect(io.err()).toContain(`that ${problem}`);
      expect(io.err()).toContain('. Pass --api-base <url> to log in to the right platform.');
      expect(io.opened).toEqual([]);
    }
  });

  it('fails before the browser when the config folder cannot be made, naming it', async () => {
    const io = await newIo({ loginTimeoutMs: 2_000 });
    // A file where the folder belongs: the key the browser would mint could not be stored.
    await writeFile(join(io.home, '.service'), 'not a folder');
    expect(await run(['login', '--api-base', running.url], io)).toBe(1);
    expect(io.err()).toBe(`Could not make the config folder ${io.home}/.service (EEXIST).\n`);
    expect(io.opened).toEqual([]);
  });

  it('refuses a plain-http --api-base off this machine', async () => {
    const io = await newIo();
    expect(await run(['login', '--api-base', 'http://platform.example.com'], io)).toBe(2);
    expect(io.err()).toMatch(/^--api-base must use https:\/\//);
  });

  it('refuses an empty --api-base instead of logging in to the default platform', async () => {
    // A variable that is not set, say: --api-base "$PLATFORM_URL".
    for (const value of ['', '  ']) {
      const io = await newIo();
      expect(await run(['login', `--api-base=${value}`, '--no-browser'], io), JSON.stringify(value)).toBe(2);
      expect(io.err()).toMatch(/^--api-base must be a URL, got "\s*"\n/);
    }
  });
});
