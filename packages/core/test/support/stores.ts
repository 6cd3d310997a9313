import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { createStore, createStoreImage, type Store } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';

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
 * A new, empty database on the PostgreSQL server at `serverUrl`, under a name of its own: tests
 * that each want a database can share one server (a database takes a moment, a server seconds).
 */
export async function createDatabase(serverUrl: string): Promise<{ name: string; url: string }> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  await withAdmin(serverUrl, (client) => client.query(`create database ${name}`));
  return { name, url: databaseUrl(serverUrl, name) };
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
  const { name, url } = await createDatabase(adminUrl);
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
 * A migrated, empty embedded store's data folder at `dataDir` (which must not hold one yet): a
 * copy of the suite's image unpacked into a folder, where creating the folder (initdb) and
 * migrating it costs several seconds of CPU, and unpacking the image an engine boot. For tests
 * about what runs on a folder, not about making one.
 */
export async function makeDataFolder(dataDir: string): Promise<void> {
  cpSync(await unpackedImage(), dataDir, { recursive: true });
}

/**
 * Migrated data folders (`makeDataFolder`), each in a temporary folder of its own: `make` gives
 * the next one's path, `removeAll` deletes them all (once their engines are closed).
 */
export function temporaryDataFolders(): { make(): Promise<string>; removeAll(): void } {
  const folders: string[] = [];
  return {
    async make() {
      const folder = mkdtempSync(join(tmpdir(), 'svc-data-'));
      folders.push(folder);
      await makeDataFolder(join(folder, 'data'));
      return join(folder, 'data');
    },
    removeAll() {
      for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** The image unpacked into a data folder, once per schema (as the image is) and kept on disk. */
let unpacked: Promise<string> | undefined;

function unpackedImage(): Promise<string> {
  unpacked ??= (async () => {
    const folder = join(tmpdir(), `${FOLDER_PREFIX}${schemaHash()}`);
    if (existsSync(join(folder, 'PG_VERSION'))) return folder;
    // Unpacked aside and renamed: a process racing this one copies a whole folder or none.
    const partial = `${folder}.${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    const engine = new PGlite({ dataDir: partial, loadDataDir: await memoryStoreImage() });
    await engine.waitReady;
    await engine.close();
    try {
      renameSync(partial, folder);
    } catch {
      // Another process renamed its own first: that one is as good.
      rmSync(partial, { recursive: true, force: true });
    }
    return folder;
  })();
  return unpacked;
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
      // Images (and their unpacked folders) of other schemas go once no test process is likely
      // to start from them.
      const unpackedFolder = join(tmpdir(), `${FOLDER_PREFIX}${schemaHash()}`);
      for (const name of readdirSync(tmpdir())) {
        const other = join(tmpdir(), name);
        if (!name.startsWith(IMAGE_PREFIX) && !name.startsWith(FOLDER_PREFIX)) continue;
        if (other === file || other === unpackedFolder) continue;
        const madeAt = statSync(other, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
        if (Date.now() - madeAt > STALE_IMAGE_MS) rmSync(other, { recursive: true, force: true });
      }
      return made;
    }
  })();
  return image;
}

const IMAGE_PREFIX = 'service-test-store-';
const FOLDER_PREFIX = 'service-test-folder-';
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
