/**
 * RFC 9700 §4.14.2, refresh token rotation with reuse detection, without logging users out by
 * their own client: a rotated token answers the same pair for a grace window (30 s by default)
 * until that pair's refresh token is first used; any other second presentation revokes the
 * family. On Postgres the two instances hold their own store handles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { openSharedDatabase, type SharedDatabase, startSecondInstance } from '../../support/instances.js';
import { rpc, type TokenSet, tokenRequest, tokensFor } from '../../support/oauth-flow.js';

const PARALLEL = 8;

for (const kind of STORE_KINDS) {
  describe(`refresh rotation (${kind})`, () => {
    let database: SharedDatabase;
    let host: DoorHost;
    let second: DoorHost;
    let strict: DoorHost;

    beforeAll(async () => {
      database = await openSharedDatabase(kind);
      // Caching on, as in production: a revocation must not wait for the cache to expire.
      host = await startDoorHost(database.store, { authCacheTtlMs: 60_000 });
      second = await startSecondInstance(host, database.second, { authCacheTtlMs: 60_000 });
      strict = await startDoorHost(database.store, { mcp: { refreshGraceMs: 0 } });
    });
    afterAll(async () => {
      await host?.close();
      await second?.close();
      await strict?.close();
      await database?.dispose();
    });

    const refresh = (door: DoorHost, tokens: { client: { clientId: string } }, refreshToken: string) =>
      tokenRequest(door, {
        grant_type: 'refresh_token',
        client_id: tokens.client.clientId,
        refresh_token: refreshToken,
      });
    const pairOf = async (response: Response) => {
      expect(response.status).toBe(200);
      return (await response.json()) as TokenSet;
    };
    const listStatus = async (door: DoorHost, token: string) => (await rpc(door, token, 'tools/list')).status;

    it(`§4.14.2 ${PARALLEL} parallel refreshes with one token all answer the same pair, and that pair keeps working`, async () => {
      const tokens = await tokensFor(host, 'parallel-user');
      const answers = await Promise.all(
        Array.from({ length: PARALLEL }, () => refresh(host, tokens, tokens.refresh_token!)),
      );
      const pairs = await Promise.all(answers.map(pairOf));
      expect(new Set(pairs.map((p) => p.access_token)).size).toBe(1);
      expect(new Set(pairs.map((p) => p.refresh_token)).size).toBe(1);
      const [pair] = pairs;
      expect(pair!.refresh_token).not.toBe(tokens.refresh_token);
      expect(await listStatus(host, pair!.access_token)).toBe(200);
      const next = await pairOf(await refresh(host, tokens, pair!.refresh_token!));
      expect(await listStatus(host, next.access_token)).toBe(200);
    });

    it('§4.14.2 two instances racing one refresh token answer the same pair', async () => {
      for (let round = 0; round < 4; round++) {
        const tokens = await tokensFor(host, `racing-user-${round}`);
        const [a, b] = await Promise.all([
          refresh(host, tokens, tokens.refresh_token!),
          refresh(second, tokens, tokens.refresh_token!),
        ]);
        const [pairA, pairB] = [await pairOf(a), await pairOf(b)];
        expect(pairB.access_token, `round ${round}`).toBe(pairA.access_token);
        expect(pairB.refresh_token, `round ${round}`).toBe(pairA.refresh_token);
        expect(await listStatus(second, pairA.access_token)).toBe(200);
      }
    });

    it('§4.14.2 a retry after a lost answer, within the grace window, gets the same pair (its remaining lifetime)', async () => {
      const tokens = await tokensFor(host, 'retrying-user');
      const lost = await pairOf(await refresh(host, tokens, tokens.refresh_token!));
      host.clock.advance(20_000);
      const retried = await pairOf(await refresh(host, tokens, tokens.refresh_token!));
      expect(retried).toEqual({ ...lost, expires_in: expect.any(Number) });
      expect(retried.expires_in).toBeGreaterThan(3570);
      expect(retried.expires_in).toBeLessThanOrEqual(3580);
      expect(await listStatus(host, retried.access_token)).toBe(200);
    });

    it('§4.14.2 the old token presented once its successor was used is reuse: the family is revoked at once', async () => {
      const tokens = await tokensFor(host, 'reused-after-use');
      const pair = await pairOf(await refresh(host, tokens, tokens.refresh_token!));
      const next = await pairOf(await refresh(host, tokens, pair.refresh_token!));
      expect(await listStatus(host, next.access_token)).toBe(200);
      const reuse = await refresh(host, tokens, tokens.refresh_token!);
      expect(reuse.status).toBe(400);
      expect((await reuse.json()).error).toBe('invalid_grant');
      // Cached a moment ago, refused now: the instance that revoked forgot it at once.
      expect(await listStatus(host, next.access_token)).toBe(401);
      expect((await refresh(host, tokens, next.refresh_token!)).status).toBe(400);
    });

    it('§4.14.2 the old token presented after the grace window is reuse: the family is revoked', async () => {
      const tokens = await tokensFor(host, 'reused-late');
      const pair = await pairOf(await refresh(host, tokens, tokens.refresh_token!));
      expect(await listStatus(host, pair.access_token)).toBe(200);
      host.clock.advance(30_001);
      expect((await refresh(host, tokens, tokens.refresh_token!)).status).toBe(400);
      expect(await listStatus(host, pair.access_token)).toBe(401);
      expect((await refresh(host, tokens, pair.refresh_token!)).status).toBe(400);
    });

    it('§4.14.2 a thief racing the client (old token past the window, successor in use) never meets a server error, and the family dies', async () => {
      for (let round = 0; round < 4; round++) {
        const tokens = await tokensFor(host, `thief-race-${round}`);
        const pair = await pairOf(await refresh(host, tokens, tokens.refresh_token!));
        host.clock.advance(30_001);
        // One instance (its clock is the test's), on Postgres over separate pooled connections.
        const [thief, client] = await Promise.all([
          refresh(host, tokens, tokens.refresh_token!),
          refresh(host, tokens, pair.refresh_token!),
        ]);
        expect(thief.status, `round ${round}`).toBe(400);
        expect([200, 400], `round ${round}`).toContain(client.status);
        const answered = (await client.json()) as TokenSet;
        if (client.status === 200) expect(await listStatus(host, answered.access_token)).toBe(401);
        expect(await listStatus(host, pair.access_token)).toBe(401);
      }
    });

    it('§4.14.2 with mcp.refreshGraceMs 0, any second presentation is reuse and revokes the family', async () => {
      const tokens = await tokensFor(strict, 'strict-user');
      const pair = await pairOf(await refresh(strict, tokens, tokens.refresh_token!));
      expect((await refresh(strict, tokens, tokens.refresh_token!)).status).toBe(400);
      expect(await listStatus(strict, pair.access_token)).toBe(401);
    });
  });
}
