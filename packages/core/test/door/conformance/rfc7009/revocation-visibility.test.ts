/**
 * RFC 7009 §2: a revoked token is invalid, and so are the other tokens of its grant, on every
 * instance of the door, not only the one that revoked it. Both instances cache verified tokens
 * for a minute; the store's notifications (LISTEN/NOTIFY) make a revocation reach the other
 * instance at once. On Postgres the instances hold their own store handles, and the time from the
 * revocation's answer to the other instance's first 401 is measured (and printed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { openSharedDatabase, type SharedDatabase, startSecondInstance } from '../../support/instances.js';
import { register, rpc, tokenRequest, tokensFor } from '../../support/oauth-flow.js';

const ROUNDS = 10;
/**
 * What the door states (docs/door.md), met by the median round; the slowest round may be held up
 * by a loaded machine, but stays far below the minute the cache would otherwise hold a token.
 */
const BOUND_MS = 100;
const SLOWEST_MS = 1500;

for (const kind of STORE_KINDS) {
  describe(`revocation across instances (${kind})`, () => {
    let database: SharedDatabase;
    let host: DoorHost;
    let other: DoorHost;

    beforeAll(async () => {
      database = await openSharedDatabase(kind);
      host = await startDoorHost(database.store, { authCacheTtlMs: 60_000 });
      other = await startSecondInstance(host, database.second, { authCacheTtlMs: 60_000 });
    });
    afterAll(async () => {
      await host?.close();
      await other?.close();
      await database?.dispose();
    });

    /**
     * Polls the other instance until it refuses the token; answers how long that took (the last
     * request's own time included) and how many requests it answered.
     */
    async function refusal(token: string): Promise<{ ms: number; polls: number }> {
      const start = performance.now();
      for (let polls = 1; performance.now() - start < 5000; polls++) {
        if ((await rpc(other, token, 'tools/list')).status === 401) {
          return { ms: performance.now() - start, polls };
        }
      }
      throw new Error('the other instance still honours the revoked token after 5 s');
    }

    it(`§2 an access token revoked at one instance is refused by another at once (median under ${BOUND_MS} ms)`, async () => {
      const delays: number[] = [];
      let firstPoll = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const tokens = await tokensFor(host, `revoked-${round}`);
        // Cached on the other instance for a minute, unless told.
        expect((await rpc(other, tokens.access_token, 'tools/list')).status).toBe(200);
        const revoked = await fetch(`${host.url}/api/service/mcp/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: tokens.access_token, client_id: tokens.client.clientId }),
        });
        expect(revoked.status).toBe(200);
        const { ms, polls } = await refusal(tokens.access_token);
        delays.push(ms);
        if (polls === 1) firstPoll++;
      }
      delays.sort((a, b) => a - b);
      console.info(
        `revocation reached the other instance (${kind}): median ${delays[ROUNDS / 2]!.toFixed(1)} ms, ` +
          `max ${delays.at(-1)!.toFixed(1)} ms, refused at the first request in ${firstPoll} of ${ROUNDS} rounds`,
      );
      expect(delays[ROUNDS / 2]).toBeLessThan(BOUND_MS);
      expect(delays.at(-1)).toBeLessThan(SLOWEST_MS);
      // One process: the notification is delivered before the revocation is even answered.
      if (kind === 'pglite') expect(firstPoll).toBe(ROUNDS);
    });

    it('§2 a family revoked by refresh reuse at one instance is refused by another at once', async () => {
      const tokens = await tokensFor(host, 'reuse-across');
      const refresh = (refreshToken: string) =>
        tokenRequest(host, {
          grant_type: 'refresh_token',
          client_id: tokens.client.clientId,
          refresh_token: refreshToken,
        });
      const pair = await (await refresh(tokens.refresh_token!)).json();
      expect((await rpc(other, pair.access_token, 'tools/list')).status).toBe(200);
      // The successor is used, so presenting the first token again is reuse.
      expect((await refresh(pair.refresh_token)).status).toBe(200);
      expect((await refresh(tokens.refresh_token!)).status).toBe(400);
      expect((await refusal(pair.access_token)).ms).toBeLessThan(SLOWEST_MS);
    });

    it('§2 an instance that could not listen at boot follows revocations once it can', async () => {
      // The database's notifications are out of reach when this instance starts: its first
      // request for a listener fails, as it would with the database away.
      let refused = false;
      let listening = false;
      const unlucky = new Proxy(database.second, {
        get(target, name, receiver) {
          if (name !== 'listen') return Reflect.get(target, name, receiver);
          return async (...args: Parameters<typeof target.listen>) => {
            if (!refused) {
              refused = true;
              throw new Error('listener unavailable');
            }
            const listener = await target.listen(...args);
            listening = true;
            return listener;
          };
        },
      });
      const late = await startSecondInstance(host, unlucky, { authCacheTtlMs: 60_000 });
      try {
        expect(refused).toBe(true);
        const tokens = await tokensFor(host, 'late-listener');
        expect((await rpc(late, tokens.access_token, 'tools/list')).status).toBe(200);
        // Asked again within a few seconds, the listener is had, and the next revocation arrives.
        const asked = performance.now();
        while (!listening && performance.now() - asked < 10_000) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(listening).toBe(true);
        expect(performance.now() - asked).toBeLessThan(5000);
        const revoked = await fetch(`${host.url}/api/service/mcp/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: tokens.access_token, client_id: tokens.client.clientId }),
        });
        expect(revoked.status).toBe(200);
        const start = performance.now();
        let status = 200;
        while (status !== 401 && performance.now() - start < 5000) {
          status = (await rpc(late, tokens.access_token, 'tools/list')).status;
        }
        expect(status).toBe(401);
        expect(performance.now() - start).toBeLessThan(SLOWEST_MS);
      } finally {
        await late.close();
      }
    });

    it('§2 a revocation at one door leaves another door on the same database alone', async () => {
      const elsewhere = await startDoorHost(database.second, { authCacheTtlMs: 60_000 });
      try {
        const tokens = await tokensFor(elsewhere, 'other-door-user');
        const revoked = await fetch(`${host.url}/api/service/mcp/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: tokens.access_token, client_id: tokens.client.clientId }),
        });
        // The client is another door's: unknown here, so nothing is revoked.
        expect(revoked.status).toBe(400);
        expect((await revoked.json()).error).toBe('invalid_client');
        // Presented by a client of this door, the token is as unknown as any (§2.2: 200, no effect).
        const ownClient = await register(host);
        for (const token of [tokens.access_token, tokens.refresh_token!]) {
          const unknown = await fetch(`${host.url}/api/service/mcp/revoke`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ token, client_id: ownClient.clientId }),
          });
          expect(unknown.status).toBe(200);
        }
        expect((await rpc(elsewhere, tokens.access_token, 'tools/list')).status).toBe(200);
      } finally {
        await elsewhere.close();
      }
    });
  });
}
