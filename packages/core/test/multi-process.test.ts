/**
 * Two platform processes on one Postgres: an event caused through one reaches a stream held by
 * the other (LISTEN/NOTIFY), and a client that reconnects to the first with Last-Event-ID gets
 * exactly the events it missed, once each. (Postgres only: the embedded store admits one process.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatform, TEST_ENCRYPTION_KEY } from './support/platform.js';
import { type ChildServer, spawnPlatform } from './support/spawn.js';
import { openSse } from './support/sse.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

describe.runIf(STORE_KINDS.includes('postgres'))('two platform processes on one Postgres', () => {
  let store: TestStore;
  let upstream: FakeUpstream;
  let setup: RunningPlatform;
  let tenant: MeteredTenant;
  let a: ChildServer;
  let b: ChildServer;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    upstream = await startFakeUpstream();
    setup = await startPlatform(store);
    await seedProviders(setup.platform, upstream.url);
    tenant = await createMeteredTenant(setup.platform, 1_000_000);
    const env = { DATABASE_URL: store.url!, SERVICE_STORE_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
    [a, b] = await Promise.all([spawnPlatform(env), spawnPlatform(env)]);
  });
  afterAll(async () => {
    await a?.kill();
    await b?.kill();
    await setup?.close();
    await upstream?.close();
    await store?.dispose();
  });

  const stream = (server: ChildServer, lastEventId?: string) =>
    openSse(`${server.url}/api/deployments/me/events`, {
      authorization: `Bearer ${tenant.appKey}`,
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    });
  const connect = async (server: ChildServer) => {
    const response = await fetch(`${server.url}/api/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'search' }),
    });
    expect(response.status).toBe(201);
  };

  it('delivers an event caused through A to a stream held by B, and replays the missed ones on A once each', async () => {
    const onB = await stream(b);
    await onB.waitForComment('connected');
    await connect(a);
    const [first] = await onB.waitForEvents(1, 5000);
    expect(first!.event).toBe('connection.connected');
    onB.close();

    await connect(b);
    await connect(a);
    const latest = (
      await store.db
        .selectFrom('apps')
        .select('event_seq')
        .where('id', '=', tenant.appId)
        .executeTakeFirstOrThrow()
    ).event_seq;
    const onA = await stream(a, first!.id);
    try {
      const missed = await onA.waitForEvents(4, 5000); // two events, each with its legacy alias
      expect(missed.map((e) => e.event)).toEqual([
        'connection.connected',
        'connection_created',
        'connection.connected',
        'connection_created',
      ]);
      expect([...new Set(missed.map((e) => Number(e.id)))]).toEqual([Number(first!.id) + 1, latest]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(onA.events).toHaveLength(4);
    } finally {
      onA.close();
    }
  });
});
