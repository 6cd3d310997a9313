/**
 * An outside agent builds a screen for the person through the demo host's MCP door: the real MCP
 * SDK client, signed in through the door's OAuth flow on the host's own sign-in page, lists the
 * service's apps tools beside the host's, calls `service_make` into the orders page's slot and
 * gets the receipt of words, never the document; the person's own session then finds the screen
 * placed on their orders page and opens it with their orders. `service_apps_open` answers the
 * door's app-open card, linking the host's apps page that opens the app.
 */

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import { columnFor, ordersScreen, withColumn } from '../src/demo-model-apps.js';
import { type RunningHost, startExpressHost } from '../src/host.js';
import { MemoryOAuthProvider, newClient, signInAndApprove } from './support/mcp-client.js';

const APPS_TOOLS = [
  'service_make',
  'service_apps_create',
  'service_apps_edit',
  'service_apps_rebase_pin',
  'service_apps_list',
  'service_apps_open',
  'service_apps_call',
  'service_apps_pin',
  'service_apps_unpin',
  'service_apps_slots',
  'service_apps_kit',
];

let store: Store;
let host: RunningHost;
let client: Client;
/** The person's browser session on the host (the cookie the sign-in page set). */
let cookie: string;

beforeAll(async () => {
  store = await openMemoryStore();
  host = await startExpressHost({ store, logger: silentLogger, env: {} });
  const provider = new MemoryOAuthProvider('http://127.0.0.1:8976/callback');
  await expect(
    newClient().connect(new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider })),
  ).rejects.toThrow(UnauthorizedError);
  const steps = await signInAndApprove(provider.authorizationUrl!, 'kim@example.com');
  cookie = steps.cookie;
  const transport = new StreamableHTTPClientTransport(new URL(host.mcpUrl), { authProvider: provider });
  await transport.finishAuth(steps.callback.searchParams.get('code')!);
  client = newClient();
  await client.connect(transport);
});
afterAll(async () => {
  await client?.close();
  await host?.close();
  await store?.close();
});

/** A wire route of the person's own session. */
async function asThePerson(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${host.url}/api/service${path}`, {
    ...init,
    headers: { cookie, 'content-type': 'application/json', ...(init.headers ?? {}) },
  });
}

async function placements(): Promise<Array<{ slot: string; appId: string }>> {
  const answer = await asThePerson('/apps/placements?page=/orders');
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { placements: Array<{ slot: string; appId: string }> }).placements;
}

describe('service_make through the demo host’s MCP door', () => {
  it('lists every service apps tool beside the host’s tools', async () => {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    for (const name of APPS_TOOLS) expect(names).toContain(name);
    expect(names).toContain('list_orders');
  });

  it('builds a screen into the orders page’s slot and answers the receipt, never the document', async () => {
    const result = await client.callTool({
      name: 'service_make',
      arguments: { wish: 'a screen of my orders beside them', document: ordersScreen(), slot: 'orders.side' },
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
    const whole = JSON.stringify(result);
    expect(whole).not.toContain('"root"');
    expect(whole).not.toContain('list_orders');
    const appId = /\b(app_[\w-]+)/.exec(receipt.note!)![1]!;

    // The person's orders page finds it in its slot and opens it with their orders.
    expect(await placements()).toMatchObject([{ slot: 'orders.side', appId }]);
    const opened = await asThePerson(`/apps/${appId}/open`, { method: 'POST', body: '{}' });
    expect(opened.status).toBe(200);
    const app = (await opened.json()) as {
      document: { title: string };
      version: number;
      queries: { orders: { orders: Array<{ id: string }> } };
    };
    expect(app.document.title).toBe('My orders');
    expect(app.version).toBe(1);
    expect(app.queries.orders.orders.map((o) => o.id)).toEqual(['A-1001', 'A-1002']);
  });

  it('refuses a screen reading a field the host does not return: failed, and the slot keeps its app', async () => {
    const before = await placements();
    const shoeSize = withColumn(ordersScreen(), columnFor("the customer's shoe size")!);
    const result = await client.callTool({
      name: 'service_make',
      arguments: { wish: 'add the shoe size', document: shoeSize, slot: 'orders.side' },
    });
    expect(result.structuredContent).toMatchObject({
      status: 'failed',
      note: expect.stringContaining('customer_shoe_size'),
    });
    expect(await placements()).toEqual(before);
    const apps = (await (await asThePerson('/apps')).json()) as { apps: unknown[] };
    expect(apps.apps).toHaveLength(1);
  });

  it('service_apps_open answers the versioned card linking the apps page that opens the app, and words', async () => {
    const [app] = (
      (await (await asThePerson('/apps')).json()) as { apps: Array<{ id: string; name: string }> }
    ).apps;
    const result = await client.callTool({ name: 'service_apps_open', arguments: { appId: app!.id } });
    expect(result.isError).toBeFalsy();
    const url = `${host.url}/apps?app=${app!.id}`;
    expect(result.structuredContent).toEqual({
      card: { type: 'service.app-open', version: 1, product: 'Demo shop', app: 'My orders', url },
      text: `Open My orders in Demo shop: ${url}`,
    });
    // The text fallback, for a client that does not read structured content.
    const text = (result.content as Array<{ type: string; text?: string }>)
      .map((part) => part.text ?? '')
      .join('\n');
    expect(text).toContain(`Open My orders in Demo shop: ${url}`);
    // The link is the host's apps page: a browser not signed in is sent to sign in, and back to it.
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe(
      `/login?return_to=${encodeURIComponent(`/apps?app=${app!.id}`)}`,
    );
  });
});
