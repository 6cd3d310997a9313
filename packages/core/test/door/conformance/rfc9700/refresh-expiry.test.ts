/**
 * RFC 9700 §4.14.2: refresh tokens expire when the client has been inactive (30 days, renewed by
 * each rotation), and no refresh token outlives its authorization by more than the absolute
 * lifetime (90 days by default, `mcp.refreshMaxAgeMs`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { type TestClient, type TokenSet, tokenRequest, tokensFor } from '../../support/oauth-flow.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let store: TestStore;
let host: DoorHost;
let shortLived: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  shortLived = await startDoorHost(store, { mcp: { refreshMaxAgeMs: 2 * HOUR } });
});
afterAll(async () => {
  await host?.close();
  await shortLived?.close();
  await store?.dispose();
});

/** Refreshes and answers the status with the next pair (when there is one). */
async function refresh(door: DoorHost, client: TestClient, refreshToken: string) {
  const response = await tokenRequest(door, {
    grant_type: 'refresh_token',
    client_id: client.clientId,
    refresh_token: refreshToken,
  });
  const body = await response.json();
  return { status: response.status, error: body.error as string | undefined, pair: body as TokenSet };
}

describe('refresh token lifetimes', () => {
  it('§4.14.2 a refresh token unused for 30 days has expired (invalid_grant)', async () => {
    const tokens = await tokensFor(host, 'idle-user');
    host.clock.advance(30 * DAY + 1000);
    expect(await refresh(host, tokens.client, tokens.refresh_token!)).toMatchObject({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('§4.14.2 each rotation renews the idle lifetime, but never past 90 days from the authorization', async () => {
    const tokens = await tokensFor(host, 'active-user');
    let current = tokens.refresh_token!;
    // Day 29, 58, 87 and 89: each within 30 days of the last rotation.
    for (const wait of [29, 29, 29, 2]) {
      host.clock.advance(wait * DAY);
      const next = await refresh(host, tokens.client, current);
      expect(next.status).toBe(200);
      current = next.pair.refresh_token!;
    }
    // Day 90 and a second: a day after the last rotation, but the authorization is too old.
    host.clock.advance(DAY + 1000);
    expect(await refresh(host, tokens.client, current)).toMatchObject({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('§4.14.2 the absolute lifetime is the door option mcp.refreshMaxAgeMs', async () => {
    const tokens = await tokensFor(shortLived, 'short-lived-user');
    shortLived.clock.advance(HOUR);
    const next = await refresh(shortLived, tokens.client, tokens.refresh_token!);
    expect(next.status).toBe(200);
    shortLived.clock.advance(HOUR + 1000);
    expect(await refresh(shortLived, tokens.client, next.pair.refresh_token!)).toMatchObject({
      status: 400,
      error: 'invalid_grant',
    });
  });
});
