/**
 * The deployment event stream over real HTTP: App Keys only, event blocks with legacy aliases,
 * Last-Event-ID replay from the store, heartbeats, the per-app stream cap, and delivery across
 * instances through LISTEN/NOTIFY.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_STREAM_PING_MS } from '../src/events/streams.js';
import type { Store } from '../src/store/index.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatform } from './support/platform.js';
import { openSse } from './support/sse.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

it("pings an open stream every 25 seconds by default, the contract's heartbeat", () => {
  expect(EVENT_STREAM_PING_MS).toBe(25_000);
});

for (const kind of STORE_KINDS) {
  describe(`deployment event stream (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    let upstream: FakeUpstream;
    let a: RunningPlatform;
    let b: RunningPlatform;

    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
      upstream = await startFakeUpstream();
      a = await startPlatform(store, { eventStreams: { pingMs: 200 } });
      // On Postgres, B is a second instance with its own pool and listener, as a second process.
      b = await startPlatform(second ?? store, { eventStreams: { pingMs: 200 } });
      await seedProviders(a.platform, upstream.url);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await second?.close();
      await upstream?.close();
      await store?.dispose();
    });

    const stream = (server: RunningPlatform, key: string, lastEventId?: string) =>
      openSse(`${server.url}/api/deployments/me/events`, {
        authorization: `Bearer ${key}`,
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      });
    /** One `connection.connected` event (and its legacy alias block) for the tenant's app. */
    const connect = async (server: RunningPlatform, tenant: MeteredTenant) => {
      const response = await fetch(`${server.url}/api/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'search' }),
      });
      expect(response.status).toBe(201);
      return (await response.json()).connection.id as string;
    };
    /**
     * A metered call, settled: `billing.usage_recorded`, then `billing.balance_changed` (one per
     * settlement batch: calls settled together share it).
     */
    const spend = async (server: RunningPlatform, tenant: MeteredTenant) => {
      const response = await fetch(`${server.url}/proxy/search/search`, {
        headers: { authorization: `Bearer ${tenant.appKey}` },
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      await server.platform.context.metering.settled();
    };
    /** The number of the app's latest event. */
    const latest = async (appId: string) =>
      (
        await store.db
          .selectFrom('apps')
          .select('event_seq')
          .where('id', '=', appId)
          .executeTakeFirstOrThrow()
      ).event_seq;
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

    it('refuses every bearer but an App Key with the nested 401, before verifying it', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      const token = (await a.platform.devIdp!.issueToken({ email: 'events@example.com' })).token;
      const connectionKey = await a.platform.context.keys.issue({
        tenantId: tenant.tenantId,
        kind: 'connection',
        connectionId: tenant.llmConnectionId,
      });
      for (const path of ['/api/deployments/me/events', '/api/deployments/me/connections']) {
        for (const headers of [
          {} as Record<string, string>,
          { authorization: `Bearer ${token}` },
          { authorization: `Bearer ${connectionKey.key}` },
          { authorization: `Bearer ${tenant.cliKey}` },
          { authorization: 'Bearer service_sk_unknown' },
          { authorization: `Basic ${tenant.appKey}` },
        ]) {
          const response = await fetch(`${a.url}${path}`, { headers });
          expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
          expect(await response.json()).toEqual({ error: { message: 'Missing or invalid Bearer token' } });
        }
      }
    });

    it('streams id, event and data blocks with id, at and kind in the payload, each legacy alias after its event', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const sse = await stream(a, tenant.appKey);
      try {
        expect(sse.status).toBe(200);
        expect(sse.headers.get('content-type')).toContain('text/event-stream');
        await sse.waitForComment('connected');
        const connectionId = await connect(a, tenant);
        const [canonical, alias] = await sse.waitForEvents(2);
        expect(canonical!.event).toBe('connection.connected');
        expect(alias!.event).toBe('connection_created');
        expect(alias!.id).toBe(canonical!.id);
        expect(alias!.data).toBe(canonical!.data);
        const payload = JSON.parse(canonical!.data);
        expect(payload).toEqual({
          id: canonical!.id,
          at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
          kind: 'connection.connected',
          slug: 'search',
          connection_id: connectionId,
        });
        await spend(a, tenant);
        const billing = await sse.waitForEvents(4);
        expect(billing.slice(2).map((e) => e.event)).toEqual([
          'billing.usage_recorded',
          'billing.balance_changed',
        ]);
        expect(JSON.parse(billing[3]!.data).remaining_micros).toBe(1_000_000 - 1200);
      } finally {
        sse.close();
      }
    });

    it('replays after Last-Event-ID exactly the events missed, once each', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const first = await stream(a, tenant.appKey);
      await first.waitForComment('connected');
      await spend(a, tenant);
      const seen = await first.waitForEvents(2);
      first.close();
      await spend(a, tenant);
      await spend(a, tenant);
      const last = Number(seen[1]!.id);
      const missed = range(last + 1, await latest(tenant.appId));
      expect(missed.length).toBeGreaterThanOrEqual(3);
      const again = await stream(a, tenant.appKey, seen[1]!.id);
      try {
        const events = await again.waitForEvents(missed.length);
        expect(events.map((e) => Number(e.id))).toEqual(missed);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(again.events).toHaveLength(missed.length);
      } finally {
        again.close();
      }
    });

    it('treats a Last-Event-ID past the newest event as nothing to replay, and new events flow', async () => {
      // A client that saw ids of a log since restored from backup, or of another deployment.
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const ahead = await stream(a, tenant.appKey, String((await latest(tenant.appId)) + 999_999));
      try {
        await ahead.waitForComment('connected');
        await spend(a, tenant);
        const events = await ahead.waitForEvents(2);
        expect(events.map((e) => e.event)).toContain('billing.usage_recorded');
        expect(Number(events[0]!.id)).toBeLessThanOrEqual(await latest(tenant.appId));
      } finally {
        ahead.close();
      }
    });

    it('keeps the last 100 events of an app for replay', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      // Two connection events from the fixture, then two per call.
      for (let i = 0; i < 60; i++) await spend(a, tenant);
      const newest = await latest(tenant.appId);
      expect(newest).toBeGreaterThan(110);
      const replay = await stream(a, tenant.appKey, '0');
      try {
        // The answer says where the replay really starts: a client sees that it missed some.
        expect(replay.headers.get('service-last-event-id')).toBe(String(newest - 100));
        const events = await replay.waitForEvents(100);
        expect(events.map((e) => Number(e.id))).toEqual(range(newest - 99, newest));
      } finally {
        replay.close();
      }
      // Older rows are trimmed now and then: never more than 20 past the 100 kept.
      const kept = await store.db
        .selectFrom('app_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('app_id', '=', tenant.appId)
        .executeTakeFirstOrThrow();
      expect(Number(kept.n)).toBeGreaterThanOrEqual(100);
      expect(Number(kept.n)).toBeLessThanOrEqual(120);
    });

    it('sends a ping comment at every heartbeat', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      const sse = await stream(a, tenant.appKey);
      try {
        await sse.waitForComment('ping', 2000);
      } finally {
        sse.close();
      }
    });

    it('refuses a 6th concurrent stream of an app with the canonical 429, and a closed stream frees its slot', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      const open = [];
      for (let i = 0; i < 5; i++) {
        const sse = await stream(i % 2 ? b : a, tenant.appKey);
        expect(sse.status).toBe(200);
        open.push(sse);
      }
      const sixth = await fetch(`${b.url}/api/deployments/me/events`, {
        headers: { authorization: `Bearer ${tenant.appKey}` },
      });
      expect(sixth.status).toBe(429);
      expect(sixth.headers.get('service-error-code')).toBe('rate_limit_sse_streams');
      const body = await sixth.json();
      expect(body.error.code).toBe('rate_limit_sse_streams');
      expect(body.error.message).toMatch(/too many concurrent SSE streams/i);
      open.pop()!.close();
      let reopened = 0;
      for (let attempt = 0; attempt < 50 && reopened !== 200; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const next = await stream(a, tenant.appKey);
        reopened = next.status;
        if (next.status === 200) open.push(next);
      }
      expect(reopened).toBe(200);
      for (const sse of open) sse.close();
    });

    it('lets no more than 5 of the app’s clients in when ten reconnect at once, across instances', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      const opened = await Promise.all(
        Array.from({ length: 10 }, (_, i) => stream(i % 2 ? b : a, tenant.appKey)),
      );
      try {
        expect(opened.filter((sse) => sse.status === 200)).toHaveLength(5);
        expect(opened.filter((sse) => sse.status === 429)).toHaveLength(5);
      } finally {
        for (const sse of opened) sse.close();
      }
    });

    /** Whether five streams of the app open at once now (every slot free), within two seconds. */
    const allSlotsFree = async (key: string) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const open = await Promise.all(Array.from({ length: 5 }, () => stream(a, key)));
        for (const sse of open) sse.close();
        if (open.every((sse) => sse.status === 200)) return true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return false;
    };

    it('holds no slot for a HEAD, nor for a client gone before it read the answer', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      for (let i = 0; i < 6; i++) {
        const head = await fetch(`${a.url}/api/deployments/me/events`, {
          method: 'HEAD',
          headers: { authorization: `Bearer ${tenant.appKey}` },
        });
        expect(head.status).toBe(200);
        expect(head.headers.get('content-type')).toMatch(/^text\/event-stream/);
        // No stream, so no position in one (documented).
        expect(head.headers.get('service-last-event-id')).toBeNull();
      }
      // Clients that go away from 0 to 12 ms after asking: before, during and after the opening.
      await Promise.all(
        Array.from(
          { length: 26 },
          (_, i) =>
            new Promise<void>((resolve) => {
              const request = httpRequest(`${a.url}/api/deployments/me/events`, {
                headers: { authorization: `Bearer ${tenant.appKey}` },
              });
              request.on('error', () => resolve());
              request.on('close', () => resolve());
              request.end();
              setTimeout(() => request.destroy(), i % 13);
            }),
        ),
      );
      expect(await allSlotsFree(tenant.appKey)).toBe(true);
    });

    it('ends a stream whose key is revoked, on this instance and on the other, and frees its slot', async () => {
      const tenant = await createMeteredTenant(a.platform, 0);
      const { keys } = a.platform.context;
      const other = await keys.issue({ tenantId: tenant.tenantId, kind: 'app', appId: tenant.appId });
      const here = await stream(a, other.key);
      const there = await stream(b, other.key);
      expect([here.status, there.status]).toEqual([200, 200]);
      await keys.revoke(other.id);
      const deadline = Date.now() + 3000;
      while (!(here.ended && there.ended) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect([here.ended, there.ended]).toEqual([true, true]);
      // The app's own key and its streams carry on.
      expect(await allSlotsFree(tenant.appKey)).toBe(true);
    });

    it('delivers an event caused on one instance to a stream held by the other', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const onB = await stream(b, tenant.appKey);
      try {
        await onB.waitForComment('connected');
        await spend(a, tenant);
        const events = await onB.waitForEvents(2, 3000);
        expect(events.map((e) => e.event)).toEqual(['billing.usage_recorded', 'billing.balance_changed']);
      } finally {
        onB.close();
      }
    });

    it('gives a client reconnecting to the other instance exactly the events it missed, once each', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const onA = await stream(a, tenant.appKey);
      await onA.waitForComment('connected');
      await spend(b, tenant);
      const seen = await onA.waitForEvents(2);
      onA.close();
      await spend(a, tenant);
      await spend(b, tenant);
      const onB = await stream(b, tenant.appKey, seen[1]!.id);
      try {
        await spend(a, tenant);
        const missed = range(Number(seen[1]!.id) + 1, await latest(tenant.appId));
        expect(missed.length).toBeGreaterThanOrEqual(5);
        const events = await onB.waitForEvents(missed.length, 3000);
        expect(events.map((e) => Number(e.id))).toEqual(missed);
        await new Promise((resolve) => setTimeout(resolve, 400));
        expect(onB.events).toHaveLength(missed.length);
      } finally {
        onB.close();
      }
    });

    it('ends open streams of a stopping instance with a retry hint, so clients come back soon', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const stopping = await startPlatform(store, { eventStreams: { pingMs: 200 } });
      const reader = await stream(stopping, tenant.appKey);
      await reader.waitForComment('connected');
      // The platform stops first, as on SIGTERM; its HTTP server closes after.
      await stopping.platform.close();
      const deadline = Date.now() + 5000;
      while (!reader.ended && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await stopping.close().catch(() => {});
      expect(reader.ended).toBe(true);
      expect(reader.retries).toEqual([1000]);
    });

    it('refuses new streams while stopping with a 503 and Retry-After, closing the connection', async () => {
      const tenant = await createMeteredTenant(a.platform, 1_000_000);
      const stopping = await startPlatform(store, { eventStreams: { pingMs: 200 } });
      try {
        await stopping.platform.close();
        const response = await fetch(`${stopping.url}/api/deployments/me/events`, {
          headers: { authorization: `Bearer ${tenant.appKey}`, accept: 'text/event-stream' },
        });
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('1');
        expect(response.headers.get('connection')).toBe('close');
        expect(response.headers.get('service-error-code')).toBe('service_unavailable');
        expect(await response.json()).toMatchObject({
          error: { code: 'service_unavailable', retry_after: 1 },
        });
      } finally {
        await stopping.close().catch(() => {});
      }
    });
  });
}
