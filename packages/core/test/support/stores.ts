import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createStore, createStoreImage, type Store } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { InlinePGlite } from '../../src/store/pglite-inline.js';

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
    const store = await openMemoryStore();
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

/**
 * A fresh, migrated, empty embedded store in memory, started from the suite's image of one:
 * creating the database and migrating it takes seconds, and hundreds of tests each want one.
 */
export async function openMemoryStore(): Promise<Store> {
  return createStore({ url: 'memory://', image: await memoryStoreImage() });
}

/**
 * Fills a new, empty data folder from the suite's image of a migrated store, for
 * `createStore({ dataDir })` to open as it opens any folder: creating the database in a folder and
 * migrating it takes several times as long, and a test not about that need not pay for it.
 */
export async function seedDataDir(dataDir: string): Promise<void> {
  const engine = await InlinePGlite.open(dataDir, await memoryStoreImage());
  await engine.close();
}

/** The image, made once per schema (by whichever test process first needs it) and kept on disk. */
let image: Promise<Blob> | undefined;

function memoryStoreImage(): Promise<Blob> {
  image ??= (async () => {
    const file = join(tmpdir(), `${IMAGE_PREFIX}${schemaHash()}.tar`);
    try {
      // Read whole, not as a file-backed blob: one of those fails to read once another process
      // has replaced or removed its file.
      return new Blob([readFileSync(file)]);
    } catch {
      const made = await createStoreImage();
      // Written aside and renamed: a process racing this one reads a whole image or none.
      const partial = `${file}.${process.pid}`;
      writeFileSync(partial, Buffer.from(await made.arrayBuffer()));
      renameSync(partial, file);
      // Images of other schemas go once no test process is likely to start from them.
      for (const name of readdirSync(tmpdir())) {
        const other = join(tmpdir(), name);
        if (!name.startsWith(IMAGE_PREFIX) || !name.endsWith('.tar') || other === file) continue;
        const madeAt = statSync(other, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
        if (Date.now() - madeAt > STALE_IMAGE_MS) rmSync(other, { force: true });
      }
      return made;
    }
  })();
  return image;
}

const IMAGE_PREFIX = 'service-test-store-';
const STALE_IMAGE_MS = 60 * 60 * 1000;

/** What the image depends on: the migrations' code, and the engine's version. */
function schemaHash(): string {
  const hash = createHash('sha256');
  for (const [name, migration] of Object.entries(MIGRATIONS)) {
    hash.update(`${name}\n${String(migration.up)}\n`);
  }
  // The engine's version, as its package folder names it (`…/@electric-sql+pglite@0.5.16/…`).
  const engine = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  hash.update(/pglite@([^/\\]+)/.exec(engine)?.[1] ?? engine);
  return hash.digest('hex').slice(0, 16);
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
