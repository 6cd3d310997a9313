/**
 * Several doors, or several instances of one door, on one database: on Postgres each on its own
 * store handle (as separate server processes would hold), on PGlite on the one embedded store.
 */
import type { Store } from '../../../src/store/index.js';
import { openSecondHandle, openTestStore, type StoreKind, type TestStore } from '../../support/stores.js';
import { type DoorHost, type DoorHostOptions, startDoorHost } from './door-host.js';

export interface SharedDatabase {
  /** The first handle (the test store). */
  store: TestStore;
  /** Another handle on the same database (Postgres), or the same store (PGlite). */
  second: Store;
  dispose(): Promise<void>;
}

export async function openSharedDatabase(kind: StoreKind): Promise<SharedDatabase> {
  const store = await openTestStore(kind);
  const second = kind === 'postgres' ? await openSecondHandle(store) : store;
  return {
    store,
    second,
    dispose: async () => {
      if (second !== store) await second.close();
      await store.dispose();
    },
  };
}

/**
 * Another instance of `host`'s door: the same canonical URL and users, its own process state
 * (caches, listener) and its own loopback address.
 */
export function startSecondInstance(host: DoorHost, store: Store, options: DoorHostOptions = {}) {
  return startDoorHost(store, {
    ...options,
    canonicalUrl: host.url,
    oauth: { principal: (subject) => host.users.get(subject) ?? null, ...options.oauth },
  });
}
