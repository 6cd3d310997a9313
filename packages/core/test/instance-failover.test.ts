/**
 * A killed instance's credit and stream slots come back within seconds: two platform processes
 * on one Postgres; one holds all of a tenant's credit in calls in flight and all of its app's
 * stream slots, and is killed with SIGKILL. The other admits the tenant's credit and opens
 * streams again within 10 s (the heartbeat's ttl plus one beat), not after the holds' own expiry.
 * (Postgres only: the embedded store admits one process.)
 *
 * @see docs/billing.md "Crash safety"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatform, TEST_ENCRYPTION_KEY } from './support/platform.js';
import { type ChildServer, spawnPlatform } from './support/spawn.js';
import { openSse, type SseReader } from './support/sse.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(STORE_KINDS.includes('postgres'))('a killed instance (postgres)', () => {
  let store: TestStore;
  let upstream: FakeUpstream;
  let setup: RunningPlatform;
  const children: ChildServer[] = [];

  beforeAll(async () => {
    store = await openTestStore('postgres');
    upstream = await startFakeUpstream();
    setup = await startPlatform(store);
    await seedProviders(setup.platform, upstream.url);
  });
  afterAll(async () => {
    upstream.gate = null;
    for (const child of children) await child.kill();
    await setup?.close();
    await upstream?.close();
    await store?.dispose();
  });

  it('gives its held credit and its stream slots back to the survivor within 10 s', async () => {
    const env = { DATABASE_URL: store.url!, SERVICE_STORE_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
    const [survivor, doomed] = await Promise.all([spawnPlatform(env), spawnPlatform(env)]);
    children.push(survivor!, doomed!);
    const tenant = await createMeteredTenant(setup.platform, 20_000);
    const auth = { authorization: `Bearer ${tenant.appKey}` };
    const search = async (server: ChildServer) => {
      const response = await fetch(`${server.url}/proxy/search/search`, { headers: auth });
      await response.arrayBuffer();
      return response.status;
    };
    const stream = (server: ChildServer) => openSse(`${server.url}/api/deployments/me/events`, auth);
    const held = async () => {
      const row = await store.db
        .selectFrom('holds')
        .select((eb) => eb.fn.sum<number>('amount_micros').as('sum'))
        .where('tenant_id', '=', tenant.tenantId)
        .executeTakeFirstOrThrow();
      return Number(row.sum ?? 0);
    };

    // The doomed instance: streamed completions that hang after their first chunk hold all the
    // credit (USD 0.005 each until the model's cost is known), and five streams take every slot.
    let open!: () => void;
    upstream.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const hanging = Array.from({ length: 5 }, () =>
      fetch(`${doomed!.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo-small', stream: true }),
      })
        .then((response) => response.arrayBuffer())
        .catch(() => null),
    );
    for (let i = 0; i < 200 && (await held()) < 20_000; i++) await sleep(25);
    expect(await held()).toBe(20_000);
    const streams: SseReader[] = [];
    for (let i = 0; i < 5; i++) {
      const sse = await stream(doomed!);
      expect(sse.status).toBe(200);
      streams.push(sse);
    }
    expect(await search(survivor!)).toBe(402);
    const sixth = await fetch(`${survivor!.url}/api/deployments/me/events`, { headers: auth });
    expect(sixth.status).toBe(429);
    await sixth.arrayBuffer();

    await doomed!.kill();
    const killedAt = Date.now();
    for (const sse of streams) sse.close();
    let admittedAfter: number | null = null;
    let streamAfter: number | null = null;
    while ((admittedAfter === null || streamAfter === null) && Date.now() - killedAt < 15_000) {
      if (admittedAfter === null && (await search(survivor!)) === 200) admittedAfter = Date.now() - killedAt;
      if (streamAfter === null) {
        const sse = await stream(survivor!);
        if (sse.status === 200) streamAfter = Date.now() - killedAt;
        sse.close();
      }
      await sleep(200);
    }
    open();
    await Promise.all(hanging);
    expect(admittedAfter).not.toBeNull();
    expect(admittedAfter!).toBeLessThan(10_000);
    expect(streamAfter).not.toBeNull();
    expect(streamAfter!).toBeLessThan(10_000);
  });
});
