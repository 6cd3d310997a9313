/**
 * A platform that stops (a deploy's SIGTERM): new metered calls are sent elsewhere with 503 and
 * `Retry-After`, and an unreachable store does not make the stop fail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMeteredTenant,
  type MeteredWorld,
  seedProviders,
  startMeteredWorld,
} from './support/metered.js';
import { startPlatform } from './support/platform.js';
import { openTestStore } from './support/stores.js';

let world: MeteredWorld;
beforeAll(async () => {
  world = await startMeteredWorld();
});
afterAll(async () => world?.close());

const complete = (url: string, key: string) =>
  fetch(`${url}/proxy/llm/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }] }),
  });

describe('a stopping platform', () => {
  it('answers new metered calls 503 with Retry-After once it stops, so callers go elsewhere', async () => {
    const stopping = await startPlatform(world.store);
    try {
      const tenant = await createMeteredTenant(stopping.platform, 1_000_000);
      const before = await complete(stopping.url, tenant.appKey);
      expect(before.status).toBe(200);
      await before.arrayBuffer();
      await stopping.platform.close({ graceMs: 2000 });
      const after = await complete(stopping.url, tenant.appKey);
      expect(after.status).toBe(503);
      expect(after.headers.get('retry-after')).toBe('1');
      expect(after.headers.get('service-error-code')).toBe('service_unavailable');
      expect((await after.json()).error).toMatchObject({ code: 'service_unavailable', retry_after: 1 });
      // The same call goes through at a live instance.
      expect((await complete(world.server.url, tenant.appKey)).status).toBe(200);
    } finally {
      await stopping.close().catch(() => {});
    }
  });

  it('stops without failing when the store is already gone', async () => {
    const store = await openTestStore();
    const lonely = await startPlatform(store);
    await seedProviders(lonely.platform, world.upstream.url);
    const tenant = await createMeteredTenant(lonely.platform, 1_000_000);
    // A call admitted in the store leaves this instance a lease to give back when it stops.
    await (await complete(lonely.url, tenant.appKey)).arrayBuffer();
    await store.dispose();
    await expect(lonely.platform.close({ graceMs: 500 })).resolves.toBeUndefined();
    await lonely.close().catch(() => {});
  });
});
