/**
 * The demo host's MCP door, started for real on loopback as the example does and driven from
 * outside: the real MCP SDK client with its OAuth client provider (discovery from the 401,
 * registration, the host's own sign-in page, consent, token, tools/list, tools/call), the
 * service-key exchange, the sign-in stand-in's page, and the whole flow again in headless Chromium.
 *
 * @see docs/door.md "The door in the demo host"
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mintServiceKey } from '@service/core/door';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeInBrowser, launchChromium } from '../../../packages/core/test/support/chromium.js';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import { type RunningHost, startExpressHost } from '../src/host.js';
import {
  connectWithBearer,
  exchangeServiceKey,
  MemoryOAuthProvider,
  newClient,
  signInAndApprove,
} from './support/mcp-client.js';

const SERVICE_KEY = mintServiceKey();

let store: Store;
let host: RunningHost;

beforeAll(async () => {
  store = await openMemoryStore();
  host = await startExpressHost({ store, logger: silentLogger, env: {}, serviceKey: SERVICE_KEY });
});
afterAll(async () => {
  await host?.close();
  await store?.close();
});

/** The first connection: the SDK meets the 401, discovers, registers and asks to authorize. */
async function startAuthorization(provider: MemoryOAuthProvider): Promise<URL> {
  await expect(
    newClient().connect(new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider })),
  ).rejects.toThrow(UnauthorizedError);
  return provider.authorizationUrl!;
}

describe('the demo host’s MCP door', () => {
  it('runs the whole OAuth flow with the MCP SDK client, signing in on the host’s own page', async () => {
    const provider = new MemoryOAuthProvider('http://127.0.0.1:8976/callback');
    const authorizationUrl = await startAuthorization(provider);
    expect(host.mcpUrl).toBe(`${host.url}/api/service/mcp`);
    expect(provider.information?.client_id).toMatch(/^mcp_client_/);
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${host.mcpUrl}/authorize`);
    expect(authorizationUrl.searchParams.get('resource')).toBe(host.mcpUrl);

    const steps = await signInAndApprove(authorizationUrl, 'Ada@Example.com');
    // Signed out, the door sends the browser to the host's sign-in page, which comes back to it.
    expect(steps.signedOut.status).toBe(302);
    const login = new URL(steps.signedOut.headers.get('location')!);
    expect(`${login.origin}${login.pathname}`).toBe(`${host.url}/login`);
    const returnTo = login.searchParams.get('return_to')!;
    expect(returnTo.startsWith(`${host.mcpUrl}/authorize?`)).toBe(true);
    expect(steps.loginPage.response.status).toBe(200);
    expect(steps.loginPage.response.headers.get('content-type')).toContain('text/html');
    expect(steps.loginPage.html).toContain('<form method="post" action="/login">');
    expect(steps.signedIn.status).toBe(303);
    expect(steps.signedIn.headers.get('location')).toBe(returnTo);
    expect(steps.signedIn.headers.get('set-cookie')).toMatch(/^host_session=[^;]+;.*HttpOnly/);
    // Signed in, the same authorization URL shows the door's consent page.
    expect(steps.consent.response.status).toBe(200);
    expect(steps.consent.html).toContain('Demo MCP client');
    expect(steps.consent.html).toContain('Demo shop');
    expect(steps.consent.html).toContain('ada@example.com');
    expect(steps.approved.status).toBe(303);
    expect(`${steps.callback.origin}${steps.callback.pathname}`).toBe(provider.redirectUrl);
    expect(steps.callback.searchParams.get('iss')).toBe(host.mcpUrl);
    const code = steps.callback.searchParams.get('code')!;
    expect(code).toMatch(/^mcp_code_/);

    const transport = new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider });
    await transport.finishAuth(code);
    expect(provider.saved).toMatchObject({
      access_token: expect.stringMatching(/^mcp_at_/),
      refresh_token: expect.stringMatching(/^mcp_rt_/),
      scope: 'read write',
    });
    const client = newClient();
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      // The host's tools, then the service's own apps tools, which no menu curates away.
      expect(tools.map((t) => t.name)).toContain('service_make');
      expect(tools.filter((t) => !t.name.startsWith('service_')).map((t) => [t.name, t.annotations])).toEqual(
        [
          ['list_orders', { title: 'List orders', readOnlyHint: true, destructiveHint: false }],
          ['order_stats', { title: 'Order figures', readOnlyHint: true, destructiveHint: false }],
          [
            'add_order_note',
            { title: 'Add a note to an order', readOnlyHint: false, destructiveHint: false },
          ],
          ['cancel_order', { title: 'Cancel an order', readOnlyHint: false, destructiveHint: true }],
        ],
      );

      // Calls run as the signed-in user: the note lands in Ada's order book.
      const noted = await client.callTool({
        name: 'add_order_note',
        arguments: { orderId: 'A-1001', note: 'Leave at the door' },
      });
      expect(noted.isError).toBeFalsy();
      expect(noted.structuredContent).toMatchObject({ id: 'A-1001', note: 'Leave at the door' });
      const listed = await client.callTool({ name: 'list_orders', arguments: {} });
      expect(listed.structuredContent).toEqual({
        count: 2,
        orders: [
          { id: 'A-1001', item: 'Espresso machine', status: 'open', note: 'Leave at the door' },
          { id: 'A-1002', item: 'Coffee grinder', status: 'open', note: null },
        ],
      });
      // The destructive tool needs an approval remembered in the app; the door has no approval UI.
      const cancelled = await client.callTool({ name: 'cancel_order', arguments: { orderId: 'A-1002' } });
      expect(cancelled.isError).toBe(true);
      expect(cancelled.structuredContent).toMatchObject({ error: { code: 'approval-required' } });
    } finally {
      await client.close();
    }
  });

  it('exchanges the service key for a ten-minute token that lists and calls tools as the named user', async () => {
    const answer = await exchangeServiceKey(host.mcpUrl, {
      key: SERVICE_KEY,
      subject: 'user:grace@example.com',
    });
    expect(answer.status).toBe(200);
    const token = (await answer.json()) as Record<string, unknown>;
    expect(token).toMatchObject({ token_type: 'Bearer', expires_in: 600 });
    expect(token.access_token).toMatch(/^mcp_at_/);
    expect(token.refresh_token).toBeUndefined();

    const client = await connectWithBearer(host.mcpUrl, String(token.access_token));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).filter((name) => !name.startsWith('service_'))).toEqual([
        'list_orders',
        'order_stats',
        'add_order_note',
        'cancel_order',
      ]);
      expect(tools.map((t) => t.name)).toContain('service_make');
      const listed = await client.callTool({ name: 'list_orders', arguments: {} });
      // Grace's own book: Ada's note from the OAuth flow is not in it.
      expect(listed.structuredContent).toMatchObject({
        orders: [{ id: 'A-1001', note: null }, { id: 'A-1002' }],
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a wrong service key, and a token for a subject the host does not know', async () => {
    const wrong = await exchangeServiceKey(host.mcpUrl, {
      key: mintServiceKey(),
      subject: 'user:a@example.com',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });

    // The door issues it (it cannot know the host's users), but principal(subject) refuses it.
    const unknown = await exchangeServiceKey(host.mcpUrl, { key: SERVICE_KEY, subject: 'admin' });
    expect(unknown.status).toBe(200);
    const { access_token } = (await unknown.json()) as { access_token: string };
    const refused = await fetch(host.mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('announces the host’s own URL in discovery, whatever the forwarded headers say', async () => {
    const unauthenticated = await fetch(host.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toContain(
      `resource_metadata="${host.url}/.well-known/oauth-protected-resource/api/service/mcp"`,
    );
    const metadata = await fetch(`${host.url}/.well-known/oauth-protected-resource/api/service/mcp`, {
      headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    expect(await metadata.json()).toMatchObject({
      resource: host.mcpUrl,
      authorization_servers: [host.mcpUrl],
    });
    const server = await (
      await fetch(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`)
    ).json();
    expect(server).toMatchObject({
      issuer: host.mcpUrl,
      grant_types_supported: expect.arrayContaining(['urn:ietf:params:oauth:grant-type:token-exchange']),
    });
  });

  it('answers the connect page with the MCP URL and no script', async () => {
    const connect = await fetch(`${host.mcpUrl}/connect`);
    expect(connect.status).toBe(200);
    const html = await connect.text();
    expect(html).toContain('Connect Demo shop to your AI assistant');
    expect(html).toContain(host.mcpUrl);
    expect(html).not.toMatch(/<script/i);
  });
});

describe('the sign-in stand-in’s page', () => {
  const postForm = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${host.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
      redirect: 'manual',
    });

  it('shows the form with a strict CSP, keeping only a return_to on this host, escaped', async () => {
    const page = await fetch(
      `${host.url}/login?return_to=${encodeURIComponent('/x?"><script>alert(1)</script>')}`,
    );
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self'");
    const html = await page.text();
    expect(html).not.toContain('<script>');
    expect(html).toContain(`name="return_to" value="${host.url}/x?%22%3E%3Cscript%3Ealert(1)%3C/script%3E"`);
    const ampersand = await fetch(`${host.url}/login?return_to=${encodeURIComponent('/x?a=1&b=2')}`);
    expect(await ampersand.text()).toContain(`name="return_to" value="${host.url}/x?a=1&amp;b=2"`);
    const foreign = await (await fetch(`${host.url}/login?return_to=https://evil.example/steal`)).text();
    expect(foreign).toContain('name="return_to" value="/"');
  });

  it('signs a browser in and sends it back only to this host', async () => {
    const home = await postForm({
      email: 'lin@example.com',
      return_to: `${host.url}/api/service/mcp/connect`,
    });
    expect(home.status).toBe(303);
    expect(home.headers.get('location')).toBe(`${host.url}/api/service/mcp/connect`);
    for (const target of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      'javascript:alert(1)',
    ]) {
      const answer = await postForm({ email: 'lin@example.com', return_to: target });
      expect(answer.status).toBe(303);
      expect(answer.headers.get('location')).toBe('/');
    }
    // The cookie it sets is a session the wire accepts too.
    const cookie = home.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${host.url}/api/service/threads`, { headers: { cookie } })).status).toBe(200);
  });

  it('refuses a malformed email with the form again, and a form posted from another site', async () => {
    const bad = await postForm({ email: 'not an email', return_to: '/' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('set-cookie')).toBeNull();
    expect(await bad.text()).toContain('Enter an email address.');
    const crossSite = await postForm({ email: 'mallory@example.com' }, { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get('set-cookie')).toBeNull();
  });
});

describeInBrowser('the OAuth flow in headless Chromium', () => {
  let browser: Browser;
  let callbackServer: Server;
  let callbackUrl: string;

  beforeAll(async () => {
    // A native MCP client's loopback callback, as Claude Code or Cursor run one.
    callbackServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => callbackServer?.close(resolve));
  });

  it('signs in on the host’s page, approves by clicking, and the client calls a tool', async () => {
    const provider = new MemoryOAuthProvider(callbackUrl, 'Browser MCP client');
    const authorizationUrl = await startAuthorization(provider);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(authorizationUrl.href);
      expect(new URL(page.url()).pathname).toBe('/login');
      await page.fill('#email', 'mei@example.com');
      await Promise.all([page.waitForSelector('button[value=approve]'), page.click('button[type=submit]')]);
      expect(await page.textContent('h1')).toContain('Browser MCP client wants to use Demo shop as you');
      const [session] = (await context.cookies(host.url)).filter((c) => c.name === 'host_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

      await Promise.all([page.waitForURL(`${callbackUrl}?**`), page.click('button[value=approve]')]);
      const code = new URL(page.url()).searchParams.get('code')!;
      const transport = new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider });
      await transport.finishAuth(code);
      const client = newClient();
      await client.connect(transport);
      const listed = await client.callTool({ name: 'list_orders', arguments: {} });
      expect(listed.structuredContent).toMatchObject({ orders: [{ id: 'A-1001' }, { id: 'A-1002' }] });
      await client.close();
    } finally {
      await context.close();
    }
  });
});
