/**
 * RFC 6749 §6: a refresh may ask for less scope than was granted, never more. The access token
 * then carries only what was asked; the refresh token keeps the original grant, so a later
 * refresh may ask for it again, and no more. Scope beyond the grant or the client's registered
 * scope is `invalid_scope`, and the refresh token is not spent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import {
  authorizeCode,
  exchange,
  register,
  rpc,
  type TestClient,
  tokenRequest,
  tokensFor,
} from '../../support/oauth-flow.js';

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

const refresh = async (client: TestClient, refreshToken: string, scope?: string) => {
  const response = await tokenRequest(host, {
    grant_type: 'refresh_token',
    client_id: client.clientId,
    refresh_token: refreshToken,
    ...(scope === undefined ? {} : { scope }),
  });
  return { status: response.status, body: await response.json() };
};

const call = (token: string, name: string, args: Record<string, unknown>) =>
  rpc(host, token, 'tools/call', { name, arguments: args });

/** How the MCP endpoint refuses a tool the token's scope does not cover: the scope step-up challenge. */
function expectInsufficientScope(answer: Awaited<ReturnType<typeof call>>) {
  expect(answer.status).toBe(403);
  expect(answer.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
}

describe('scope on refresh', () => {
  it('§6 a refresh asking for less scope gets an access token with only that scope', async () => {
    const tokens = await tokensFor(host, 'narrowing-user');
    expect(tokens.scope).toBe('read write');
    const narrowed = await refresh(tokens.client, tokens.refresh_token!, 'read');
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope).toBe('read');
    const read = await call(narrowed.body.access_token, 'list_notes', {});
    expect(read.body?.result?.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
    expectInsufficientScope(await call(narrowed.body.access_token, 'create_note', { text: 'no' }));
    // The token of the original grant is untouched by the narrowing.
    const write = await call(tokens.access_token, 'create_note', { text: 'yes' });
    expect(write.body?.result?.structuredContent).toEqual({ created: 'yes' });
  });

  it('§6 the refresh token keeps the original grant: a later refresh gets it back, and no more', async () => {
    const tokens = await tokensFor(host, 'widening-user');
    const narrowed = await refresh(tokens.client, tokens.refresh_token!, 'read');
    const restored = await refresh(tokens.client, narrowed.body.refresh_token, 'read write');
    expect(restored).toMatchObject({ status: 200, body: { scope: 'read write' } });
    const write = await call(restored.body.access_token, 'create_note', { text: 'again' });
    expect(write.body?.result?.structuredContent).toEqual({ created: 'again' });
    const unasked = await refresh(tokens.client, restored.body.refresh_token);
    expect(unasked).toMatchObject({ status: 200, body: { scope: 'read write' } });
  });

  it('§6 a repeated refresh asking for less scope than the pair it replays gets no more than it asked', async () => {
    const tokens = await tokensFor(host, 'replay-narrowing-user');
    // The first refresh asks for the whole grant; the second, within the grace window, for less.
    const whole = await refresh(tokens.client, tokens.refresh_token!);
    expect(whole).toMatchObject({ status: 200, body: { scope: 'read write' } });
    const narrowed = await refresh(tokens.client, tokens.refresh_token!, 'read');
    expect(narrowed).toMatchObject({ status: 200, body: { scope: 'read' } });
    expect(narrowed.body.access_token).not.toBe(whole.body.access_token);
    // Still one chain: the same refresh token as the first answer.
    expect(narrowed.body.refresh_token).toBe(whole.body.refresh_token);
    const read = await call(narrowed.body.access_token, 'list_notes', {});
    expect(read.body?.result?.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
    expectInsufficientScope(await call(narrowed.body.access_token, 'create_note', { text: 'no' }));
    // Asking again for the whole grant answers the pair itself, as before.
    const again = await refresh(tokens.client, tokens.refresh_token!);
    expect(again.body.access_token).toBe(whole.body.access_token);
  });

  it('§6 a scope beyond the original grant is refused (400 invalid_scope) and the token is not spent', async () => {
    const flow = await authorizeCode(host, 'read-only-user', undefined, { scope: 'read' });
    const tokens = await exchange(host, flow);
    expect(tokens.scope).toBe('read');
    expect(await refresh(flow.client, tokens.refresh_token!, 'read write')).toMatchObject({
      status: 400,
      body: { error: 'invalid_scope' },
    });
    expect(await refresh(flow.client, tokens.refresh_token!, 'write')).toMatchObject({
      status: 400,
      body: { error: 'invalid_scope' },
    });
    const unasked = await refresh(flow.client, tokens.refresh_token!);
    expect(unasked).toMatchObject({ status: 200, body: { scope: 'read' } });
  });

  it("§6 a scope beyond the client's registered scope is refused (400 invalid_scope)", async () => {
    const client = await register(host, { scope: 'read' });
    const tokens = await exchange(
      host,
      await authorizeCode(host, 'registered-reader', client, { scope: null }),
    );
    expect(tokens.scope).toBe('read');
    expect(await refresh(client, tokens.refresh_token!, 'read write')).toMatchObject({
      status: 400,
      body: { error: 'invalid_scope' },
    });
    expect(await refresh(client, tokens.refresh_token!, 'read')).toMatchObject({
      status: 200,
      body: { scope: 'read' },
    });
  });

  it('§3.3 an unknown scope on refresh is refused (400 invalid_scope)', async () => {
    const tokens = await tokensFor(host, 'unknown-scope-user');
    expect(await refresh(tokens.client, tokens.refresh_token!, 'read admin')).toMatchObject({
      status: 400,
      body: { error: 'invalid_scope' },
    });
  });
});
