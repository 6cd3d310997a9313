/**
 * Claims are atomic in the store: instances racing to redeem one code yield exactly one winner,
 * and instances racing to rotate one refresh token answer one pair (the grace window). On Postgres
 * the racers are two store handles, as two server instances would hold; on PGlite, concurrent
 * requests to one instance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDoor, type Door } from '../../src/door/index.js';
import { silentLogger } from '../../src/http/logger.js';
import type { Store } from '../../src/store/index.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { authorizeCode, exchange } from './support/oauth-flow.js';

const ROUNDS = 8;

for (const kind of STORE_KINDS) {
  describe(`racing instances (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    let host: DoorHost;
    let other: Door;

    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
      host = await startDoorHost(store);
      // The second instance: its own store handle, the same canonical URL and adapter.
      other = createDoor({
        mcp: { baseUrl: host.url },
        oauth: {
          session: () => new Response(null, { status: 401 }),
          principal: (s) => host.users.get(s) ?? null,
        },
        store: second ?? store,
        logger: silentLogger,
        env: {},
      });
    });
    afterAll(async () => {
      await host?.close();
      await second?.close();
      await store?.dispose();
    });

    const tokenAt = (target: 'host' | 'other', fields: Record<string, string>) => {
      const request = new Request(`${host.url}/api/service/mcp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      });
      return target === 'host' ? fetch(request) : other.handle(request).then((r) => r!);
    };

    it('lets exactly one of two instances redeem one authorization code', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const flow = await authorizeCode(host, `racer-${round}`);
        const fields = {
          grant_type: 'authorization_code',
          code: flow.code,
          client_id: flow.client.clientId,
          redirect_uri: flow.client.redirectUri,
          code_verifier: flow.pkce.verifier,
        };
        const answers = await Promise.all([tokenAt('host', fields), tokenAt('other', fields)]);
        const statuses = answers.map((a) => a.status).sort();
        expect(statuses, `round ${round}`).toEqual([200, 400]);
        const loser = answers.find((a) => a.status === 400)!;
        expect((await loser.json()).error).toBe('invalid_grant');
      }
    });

    it('lets two instances racing one refresh token answer one and the same pair', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const flow = await authorizeCode(host, `rotator-${round}`);
        const tokens = await exchange(host, flow);
        const fields = {
          grant_type: 'refresh_token',
          client_id: flow.client.clientId,
          refresh_token: tokens.refresh_token!,
        };
        const answers = await Promise.all([tokenAt('host', fields), tokenAt('other', fields)]);
        expect(
          answers.map((a) => a.status),
          `round ${round}`,
        ).toEqual([200, 200]);
        const [first, second] = await Promise.all(answers.map((a) => a.json()));
        expect(second.access_token).toBe(first.access_token);
        expect(second.refresh_token).toBe(first.refresh_token);
        // The pair lives on: its refresh token rotates once more.
        const next = await tokenAt('other', { ...fields, refresh_token: first.refresh_token });
        expect(next.status, `round ${round}`).toBe(200);
      }
    });
  });
}
