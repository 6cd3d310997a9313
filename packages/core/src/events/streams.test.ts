/**
 * An app's stream slots outlive no stream across a blink of the store: a claim whose stream
 * could not open is given back, and a slot whose release the store could not take is freed once
 * the store is back, not when its minute-long expiry lapses. Nor do they outlive a client that
 * stops reading: it is dropped once 1 MB piles up.
 *
 * @see docs/api/runtime.md "GET /api/deployments/me/events"
 */
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { silentLogger } from '../http/logger.js';
import { StoreUnavailableError } from '../store/availability.js';
import type { Store } from '../store/index.js';
import { appendEvents } from './log.js';
import { EventStreamHub } from './streams.js';

/** Statements the store refuses as unreachable while `away` says so, as a blink would. */
class Blink implements KyselyPlugin {
  away: ((node: RootOperationNode) => boolean) | null = null;
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (this.away?.(node)) throw new StoreUnavailableError();
    return node;
  }
  async transformResult<R>({ result }: { result: R }): Promise<R> {
    return result;
  }
}

/** Whether a statement is of `kind` and touches `table`. */
const statement = (kind: RootOperationNode['kind'], table: string) => (node: RootOperationNode) =>
  node.kind === kind && JSON.stringify(node).includes(`"name":"${table}"`);

for (const kind of STORE_KINDS) {
  describe(`event stream slots across a store blink, and a client that stops reading (${kind})`, () => {
    let store: TestStore;
    let hub: EventStreamHub;
    const blink = new Blink();

    beforeAll(async () => {
      store = await openTestStore(kind);
      const db = store.db.withPlugin(blink);
      // The hub reads and writes through the blinking handle; everything else of the store as is.
      const blinking = new Proxy(store as Store, {
        get(target, name) {
          if (name === 'db') return db;
          const value = Reflect.get(target, name);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      hub = await EventStreamHub.start(blinking, { logger: silentLogger, maxStreamsPerApp: 2 });
    });
    afterAll(async () => {
      blink.away = null;
      await hub?.close();
      await store?.dispose();
    });

    const newApp = async () => {
      const tenant = await store.db
        .insertInto('tenants')
        .values({ name: 't' })
        .returning('id')
        .executeTakeFirstOrThrow();
      const app = await store.db
        .insertInto('apps')
        .values({ tenant_id: tenant.id, slug: 'tool', name: 'Tool' })
        .returning('id')
        .executeTakeFirstOrThrow();
      return app.id;
    };
    const slotsOf = async (appId: string) =>
      (await store.db.selectFrom('event_streams').select('id').where('app_id', '=', appId).execute()).length;
    const eventually = async (check: () => Promise<boolean>) => {
      const deadline = Date.now() + 5000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error('not within 5 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    it('gives a slot back when the store goes away after it was claimed', async () => {
      const appId = await newApp();
      // The claim lands; the read of where the stream starts does not.
      blink.away = statement('SelectQueryNode', 'apps');
      await expect(hub.open(appId, null)).rejects.toBeInstanceOf(StoreUnavailableError);
      blink.away = null;
      await eventually(async () => (await slotsOf(appId)) === 0);
      // Both of the app's slots are there for streams that do open.
      const opened = [await hub.open(appId, null), await hub.open(appId, null)];
      expect(opened.map((result) => result.ok)).toEqual([true, true]);
      for (const result of opened) if (result.ok) await result.response.body?.cancel();
      await eventually(async () => (await slotsOf(appId)) === 0);
    });

    it('frees the slot of a stream that ended during the blink once the store is back', async () => {
      const appId = await newApp();
      const client = new AbortController();
      const opened = await hub.open(appId, null, { signal: client.signal });
      expect(opened.ok).toBe(true);
      expect(await slotsOf(appId)).toBe(1);
      // The client goes away while the store cannot take the release.
      blink.away = statement('DeleteQueryNode', 'event_streams');
      client.abort();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await slotsOf(appId)).toBe(1);
      blink.away = null;
      await eventually(async () => (await slotsOf(appId)) === 0);
      // The app's two slots are both free again.
      const again = [await hub.open(appId, null), await hub.open(appId, null)];
      expect(again.map((result) => result.ok)).toEqual([true, true]);
      for (const result of again) if (result.ok) await result.response.body?.cancel();
    });

    it('drops a client that stops reading once 1 MB of output piles up, and frees its slot', async () => {
      const appId = await newApp();
      const opened = await hub.open(appId, null);
      if (!opened.ok) throw new Error('the stream did not open');
      expect(await slotsOf(appId)).toBe(1);
      // 30 events of about 40 KB each (20 KB of slug, written under its legacy alias too): 1.2 MB,
      // none of it read.
      const drafts = Array.from({ length: 30 }, (_, i) => ({
        appId,
        kind: 'connection.connected' as const,
        fields: { slug: `${i}`.padEnd(20_000, 'x'), connection_id: `c${i}` },
      }));
      await store.db.transaction().execute((trx) => appendEvents(trx, drafts));
      await eventually(async () => (await slotsOf(appId)) === 0);
      // What was written before the drop is still read, then the stream ends.
      const reader = opened.response.body!.getReader();
      let bytes = 0;
      for (let read = await reader.read(); !read.done; read = await reader.read())
        bytes += read.value.byteLength;
      expect(bytes).toBeGreaterThan(1_000_000);
      expect(bytes).toBeLessThan(1_100_000);
    });
  });
}
