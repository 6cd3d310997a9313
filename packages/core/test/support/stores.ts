import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/index.js';

export type StoreKind = 'pglite' | 'postgres';

/**
 * The databases a store suite runs against: embedded PGlite always, Postgres too when
 * `DATABASE_URL` is set (CI starts a throwaway PostgreSQL 15 cluster and sets it).
 */
export const STORE_KINDS: StoreKind[] = process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

export interface TestStore extends Store {
  /** Connection string of the test database (Postgres only). */
  readonly url?: string;
  /** Closes the store and drops its database. */
  dispose(): Promise<void>;
}

/**
 * A fresh, migrated, empty store. On Postgres each call gets its own database, so test files
 * running in parallel never see each other's rows.
 */
export async function openTestStore(kind: StoreKind = 'pglite'): Promise<TestStore> {
  if (kind === 'pglite') {
    const store = await createStore({ url: 'memory://' });
    return Object.assign(store, { dispose: () => store.close() });
  }
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('openTestStore("postgres") needs DATABASE_URL');
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  await withAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  const url = databaseUrl(adminUrl, name);
  const store = await createStore({ url, poolSize: 5 });
  return Object.assign(store, {
    url,
    dispose: async () => {
      await store.close();
      await withAdmin(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  });
}

/** Another store handle on the same Postgres database, as a second server instance would open. */
export async function openSecondHandle(store: TestStore): Promise<Store> {
  if (!store.url) throw new Error('A second handle needs a Postgres test store');
  return createStore({ url: store.url, poolSize: 5 });
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
