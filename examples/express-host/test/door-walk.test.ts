/**
 * The person's orders page while an outside agent builds for them over the MCP door, in headless
 * Chromium: the person has `/orders` open, the agent (the real MCP SDK client, signed in as that
 * same person through the door's OAuth flow) calls `service_make` into the page's slot and gets
 * the four-field receipt; when the person comes back to the page (its window regains focus, as
 * when they return from the agent's app) the slot reads its placement again and shows the screen
 * with their real orders beside the host's own, without a reload. A refused build over the door
 * then leaves the slot's screen as it was, reloaded.
 */
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  CHROMIUM_PATH,
  contextWithCookie,
  describeInBrowser,
  launchChromium,
} from '../../../packages/core/test/support/chromium.js';
import { columnFor, ordersScreen, withColumn } from '../src/demo-model-apps.js';
import type { RunningHost } from '../src/host.js';
import { type BundledHost, bundledHost } from './support/bundled-host.js';
import { MemoryOAuthProvider, newClient, signInAndApprove } from './support/mcp-client.js';

const PERSON = 'kim@example.com';
const HOST_WORDS = 'Your own screen can go here.';

let bundled: BundledHost;
let host: RunningHost;

beforeAll(async () => {
  bundled = await bundledHost('chat-ui-door-walk-');
  host = bundled.host;
});
afterAll(async () => {
  await bundled?.close();
});

describeInBrowser(
  `an agent builds over the MCP door into the open orders page (needs ${CHROMIUM_PATH})`,
  () => {
    let browser: Browser;
    let page: Page;
    let client: Client;
    let appId: string;

    beforeAll(async () => {
      // The agent signs in through the door's OAuth flow as the person; the browser keeps the
      // session the host's sign-in page gave that person.
      const provider = new MemoryOAuthProvider('http://127.0.0.1:8976/callback');
      await expect(
        newClient().connect(
          new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider }),
        ),
      ).rejects.toThrow(UnauthorizedError);
      const steps = await signInAndApprove(provider.authorizationUrl!, PERSON);
      const transport = new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider });
      await transport.finishAuth(steps.callback.searchParams.get('code')!);
      client = newClient();
      await client.connect(transport);

      browser = await launchChromium();
      page = await (await contextWithCookie(browser, host.url, steps.cookie)).newPage();
      page.setDefaultTimeout(10_000);
    });
    afterAll(async () => {
      await client?.close();
      await browser?.close();
    });

    const hostOrders = () => page.getByRole('table', { name: 'Orders' });
    const placed = () => page.locator(`[data-service-slot="orders.side"][data-service-app="${appId}"]`);
    const columnHeaders = async () => (await placed().getByRole('columnheader').allTextContents()).sort();

    /** The host's own orders table and summary, drawn by the host around the slot. */
    async function hostContentShows(): Promise<void> {
      await hostOrders().getByRole('cell', { name: 'A-1001' }).waitFor();
      await hostOrders().getByRole('cell', { name: 'Espresso machine' }).waitFor();
      await page.locator('[data-service-remixable="orders-summary"]').getByText('Orders').waitFor();
    }

    it('the person has their orders page open, its slot showing the host’s own words', async () => {
      await page.goto(`${host.url}/orders`);
      expect(new URL(page.url()).pathname).toBe('/orders');
      await hostContentShows();
      await page.getByText(HOST_WORDS).waitFor();
      expect(await page.locator('[data-service-slot="orders.side"]').count()).toBe(0);
    });

    it('the agent’s service_make answers the built receipt; back on the page, the slot shows the screen with the person’s orders', async () => {
      const result = await client.callTool({
        name: 'service_make',
        arguments: {
          wish: 'a screen of my orders beside them',
          document: ordersScreen(),
          slot: 'orders.side',
        },
      });
      expect(result.isError).toBeFalsy();
      const receipt = result.structuredContent as Record<string, string>;
      expect(Object.keys(receipt).sort()).toEqual(['app', 'note', 'status', 'where']);
      expect(receipt).toMatchObject({
        status: 'built',
        app: 'My orders',
        where: 'Beside my orders on /orders',
        note: expect.stringMatching(/^saved as version 1 of app_/),
      });
      appId = /\b(app_[\w-]+)/.exec(receipt.note!)![1]!;

      // The person returns to the open page: no reload.
      await page.evaluate(() => window.dispatchEvent(new Event('focus')));
      await placed().getByRole('cell', { name: 'A-1001' }).waitFor();
      await placed().getByRole('cell', { name: 'A-1002' }).waitFor();
      expect(await page.getByText(HOST_WORDS).count()).toBe(0);
      await hostContentShows();
    });

    it('a refused build over the door leaves the slot’s screen as it was, on reload', async () => {
      const before = { text: await placed().textContent(), headers: await columnHeaders() };
      const shoeSize = withColumn(ordersScreen(), columnFor("the customer's shoe size")!);
      const result = await client.callTool({
        name: 'service_make',
        arguments: { wish: 'add the shoe size', document: shoeSize, slot: 'orders.side' },
      });
      expect(result.structuredContent).toMatchObject({
        status: 'failed',
        note: expect.stringContaining('customer_shoe_size'),
      });

      await page.reload();
      await placed().getByRole('cell', { name: 'A-1001' }).waitFor();
      expect(await columnHeaders()).toEqual(before.headers);
      expect(await placed().getByRole('columnheader', { name: /shoe/i }).count()).toBe(0);
      expect(await placed().textContent()).toBe(before.text);
      await hostContentShows();
    });
  },
);
