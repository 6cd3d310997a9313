/**
 * MCP 2025-11-25 Streamable HTTP security: the MCP endpoint validates `Origin` on every request.
 * A present Origin the door does not trust (another site, a host name rebound to this server) is
 * a 403 before anything else; no Origin (native clients), the door's own origin and the configured
 * `mcp.allowedOrigins` are served. Raw HTTP for the rules, headless Chromium for the attack.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeInBrowser, launchChromium } from '../../../support/chromium.js';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { INITIALIZE_PARAMS, rpc, tokensFor } from '../../support/oauth-flow.js';

const INSPECTOR = 'https://inspector.example';

let store: TestStore;
let host: DoorHost;
let token: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, { mcp: { allowedOrigins: [`${INSPECTOR}/`] } });
  token = (await tokensFor(host, 'origin-user')).access_token;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const FORBIDDEN = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32000, message: 'Forbidden: pages from this origin may not call this MCP server' },
};

describe('MCP 2025-11-25 Origin validation', () => {
  it('§Security Warning: a present Origin the door does not trust is refused 403 (a JSON-RPC error without id)', async () => {
    const before = host.executions.length;
    const { port } = new URL(host.url);
    for (const origin of [
      'https://evil.example',
      `http://localhost:${port}`,
      `${host.url}.evil.example`,
      'null',
    ]) {
      const call = await rpc(
        host,
        token,
        'tools/call',
        { name: 'create_note', arguments: { text: 'from a page' } },
        { origin },
      );
      expect(call.status, origin).toBe(403);
      expect(call.body, origin).toEqual(FORBIDDEN);
      // Before authentication: the refusal does not depend on the token.
      expect((await rpc(host, null, 'tools/list', {}, { origin })).status, origin).toBe(403);
    }
    expect(host.executions.length).toBe(before);
  });

  it("§Security Warning: an untrusted page's preflight, DELETE and GET are refused 403 too", async () => {
    const headers = { origin: 'https://evil.example', authorization: `Bearer ${token}` };
    const preflight = await fetch(`${host.url}/api/service/mcp`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(preflight.status).toBe(403);
    expect((await fetch(`${host.url}/api/service/mcp`, { method: 'DELETE', headers })).status).toBe(403);
    expect((await fetch(`${host.url}/api/service/mcp`, { headers })).status).toBe(403);
  });

  it("§Security Warning: no Origin (native clients), the door's own origin and a configured origin are served", async () => {
    const origins: Array<Record<string, string>> = [
      {},
      { origin: new URL(host.url).origin },
      { origin: INSPECTOR },
    ];
    for (const headers of origins) {
      const initialized = await rpc(host, token, 'initialize', INITIALIZE_PARAMS, headers);
      expect(initialized.status, JSON.stringify(headers)).toBe(200);
      const called = await rpc(host, token, 'tools/call', { name: 'list_notes', arguments: {} }, headers);
      expect(called.body?.result?.structuredContent, JSON.stringify(headers)).toEqual({
        notes: ['first', 'second'],
        tag: null,
      });
    }
    const preflight = await fetch(`${host.url}/api/service/mcp`, {
      method: 'OPTIONS',
      headers: { origin: INSPECTOR, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
  });
});

describeInBrowser('MCP 2025-11-25 Origin validation in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Opens `pageUrl` and POSTs a tools/call from it to `endpoint`: the status, or the fetch error. */
  const callFromPage = async (pageUrl: string, endpoint: string) => {
    const page = await browser.newPage();
    try {
      await page.goto(pageUrl);
      return await page.evaluate(
        async ({ endpoint, token }) => {
          try {
            const response = await fetch(endpoint, {
              method: 'POST',
              headers: {
                authorization: `Bearer ${token}`,
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
              },
              body: JSON.stringify({
                jsonrpc: '2.0',
                id: 1,
                method: 'tools/call',
                params: { name: 'create_note', arguments: { text: 'from a browser' } },
              }),
            });
            return response.status;
          } catch (error) {
            return String(error);
          }
        },
        { endpoint, token },
      );
    } finally {
      await page.close();
    }
  };

  it('§Security Warning: a page on a host name rebound to the door cannot call it; a page on its own origin can', async () => {
    const { port } = new URL(host.url);
    const rebound = `http://localhost:${port}`;
    const before = host.executions.length;
    // DNS rebinding: the browser sees one origin, so no preflight; the Origin header gives it away.
    expect(await callFromPage(`${rebound}/callback`, `${rebound}/api/service/mcp`)).toBe(403);
    // Another site calling the real name: the preflight is refused, so the request is never sent.
    expect(await callFromPage(`${rebound}/callback`, `${host.url}/api/service/mcp`)).toMatch(/TypeError/);
    expect(host.executions.length).toBe(before);
    expect(await callFromPage(`${host.url}/callback`, `${host.url}/api/service/mcp`)).toBe(200);
    expect(host.executions.at(-1)?.input).toEqual({ text: 'from a browser' });
  });
});
