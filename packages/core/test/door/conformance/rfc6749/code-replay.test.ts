/**
 * RFC 6749 §4.1.2: a code presented twice is refused, and the tokens its first exchange issued
 * are revoked; at once on the instance that saw the replay, even with its token cache on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { authorizeCode, exchange, rpc, tokenRequest } from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, { authCacheTtlMs: 60_000 });
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

describe('authorization code replay', () => {
  it('§4.1.2 a replayed code revokes the tokens issued from it at once, though they were cached', async () => {
    const flow = await authorizeCode(host, 'replayed-user');
    const tokens = await exchange(host, flow);
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(200);
    const replay = await tokenRequest(host, {
      grant_type: 'authorization_code',
      code: flow.code,
      client_id: flow.client.clientId,
      redirect_uri: flow.client.redirectUri,
      code_verifier: flow.pkce.verifier,
    });
    expect(replay.status).toBe(400);
    expect((await replay.json()).error).toBe('invalid_grant');
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);
    const refresh = await tokenRequest(host, {
      grant_type: 'refresh_token',
      client_id: flow.client.clientId,
      refresh_token: tokens.refresh_token!,
    });
    expect(refresh.status).toBe(400);
  });
});
