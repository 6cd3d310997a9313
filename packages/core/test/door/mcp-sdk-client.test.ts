/**
 * The real MCP SDK client, with its OAuth client provider, against a running door: discovery from
 * the first 401, dynamic registration, authorize, consent (the test posts the form), token,
 * tools/list with annotations, tools/call, refresh, revoke, then 401.
 */

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryOAuthProvider } from '../support/mcp-oauth-client.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { openConsent, postConsent, signIn } from './support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

describe('the MCP SDK client against the door', () => {
  it('discovers, registers, authorizes, lists and calls tools, refreshes, and is refused after revoking', async () => {
    const mcpUrl = new URL(`${host.url}/api/service/mcp`);
    const provider = new MemoryOAuthProvider(`${host.url}/callback`, 'SDK test client');

    // 1. The first request answers 401; the SDK discovers OAuth from it, registers and redirects.
    const first = new Client({ name: 'door-test', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toThrow(UnauthorizedError);
    expect(provider.information?.client_id).toMatch(/^mcp_client_/);
    const authorizationUrl = provider.authorizationUrl!;
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${host.url}/api/service/mcp/authorize`);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('resource')).toBe(mcpUrl.toString());

    // 2. The user signs in and approves on the consent page (the test posts the form).
    const cookie = signIn(host, 'sdk-user');
    const consent = await openConsent(authorizationUrl.toString(), cookie);
    expect(consent.response.status).toBe(200);
    expect(consent.html).toContain('SDK test client');
    const approved = await postConsent(host, cookie, {
      transaction: consent.transaction,
      csrf_token: consent.csrfToken,
      decision: 'approve',
    });
    expect(approved.status).toBe(303);
    const callback = new URL(approved.headers.get('location')!);
    expect(callback.searchParams.get('iss')).toBe(mcpUrl.toString());
    const code = callback.searchParams.get('code')!;

    // 3. The SDK exchanges the code and connects.
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(code);
    expect(provider.saved?.refresh_token).toMatch(/^mcp_rt_/);
    const client = new Client({ name: 'door-test', version: '1.0.0' });
    await client.connect(transport);
    expect(transport.sessionId).toMatch(/^mcp_ses_/);

    // 4. tools/list: the end-user menu with annotations from the risk labels.
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'list_notes',
      'create_note',
      'delete_note',
      'archive_note',
      'ungraded_tool',
      'failing_tool',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.list_notes!.annotations).toEqual({
      title: 'List notes',
      readOnlyHint: true,
      destructiveHint: false,
    });
    expect(byName.create_note!.annotations).toEqual({
      title: 'create_note',
      readOnlyHint: false,
      destructiveHint: false,
    });
    expect(byName.delete_note!.annotations).toEqual({
      title: 'delete_note',
      readOnlyHint: false,
      destructiveHint: true,
    });
    expect(byName.ungraded_tool!.annotations).toEqual({ title: 'ungraded_tool' });
    expect(byName.list_notes!.inputSchema).toMatchObject({
      type: 'object',
      properties: { tag: { type: 'string' } },
    });

    // 5. tools/call reaches the host through actAs, never with the inbound bearer.
    const result = await client.callTool({ name: 'list_notes', arguments: { tag: 'work' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ notes: ['first', 'second'], tag: 'work' });
    expect(host.actAsCalls.at(-1)?.grant).toEqual({
      subject: 'sdk-user',
      scopes: ['read', 'write'],
      clientId: provider.information!.client_id,
    });
    const execution = host.executions.at(-1)!;
    expect(execution.headers).toEqual({ authorization: 'Bearer host-session-of-sdk-user' });
    expect(JSON.stringify(execution)).not.toContain(provider.saved!.access_token);

    // 6. An hour later the access token has expired: the SDK refreshes on the 401 and carries on.
    const beforeRefresh = provider.saved!;
    host.clock.advance(61 * 60 * 1000);
    const again = await client.callTool({ name: 'create_note', arguments: { text: 'after refresh' } });
    expect(again.structuredContent).toEqual({ created: 'after refresh' });
    expect(provider.saved!.access_token).not.toBe(beforeRefresh.access_token);
    expect(provider.saved!.refresh_token).not.toBe(beforeRefresh.refresh_token);

    // 7. Revoking the refresh token retires the family: the next call is refused with 401.
    const revoked = await fetch(`${host.url}/api/service/mcp/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: provider.saved!.refresh_token!,
        token_type_hint: 'refresh_token',
        client_id: provider.information!.client_id,
      }),
    });
    expect(revoked.status).toBe(200);
    expect(await revoked.text()).toBe('');
    const accessToken = provider.saved!.access_token;
    await expect(client.callTool({ name: 'list_notes', arguments: {} })).rejects.toThrow();
    const raw = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await client.close().catch(() => {});
  });
});
