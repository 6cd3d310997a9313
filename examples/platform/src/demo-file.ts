import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** A demo file and the store it describes. */
export interface DemoFileOf {
  path: string;
  /**
   * The store, as the file records it: `pglite:<folder>`, or `postgres://<host>:<port>/<database>`
   * (never the credentials: the file names the store, not how to sign in to it).
   */
  store: string;
}

/**
 * Where the demo of the store `pnpm start` runs on is kept. The default store (`.service/data`)
 * and PostgreSQL keep `.service/demo.json`, where the README's commands read it; the embedded
 * store in another folder keeps its own beside that folder (`<folder>.demo.json`, as its journal
 * is `<folder>.journal`), so a second data folder started from the same working folder never
 * rewrites the first one's keys.
 */
export function demoFileOf(databaseUrl: string | undefined, dataDir: string): DemoFileOf {
  const folderFile = resolve('.service/demo.json');
  const url = databaseUrl?.trim();
  if (url === 'memory://') return { path: folderFile, store: url };
  if (url) {
    // Validated by the store before this is asked: a postgres:// or postgresql:// URL.
    const { hostname, port, pathname } = new URL(url);
    return { path: folderFile, store: `postgres://${hostname}:${port || '5432'}${pathname}` };
  }
  const store = `pglite:${dataDir}`;
  return { path: dataDir === resolve('.service/data') ? folderFile : `${dataDir}.demo.json`, store };
}

/**
 * Refuses a demo file that records another store (the default store and PostgreSQL share
 * `.service/demo.json`): its keys are not this store's, and writing this store's over them would
 * lose the other's. A file recording no store (written by an earlier version) is taken as this
 * store's; one of an in-memory store describes a store that is gone.
 */
export function checkDemoFile({ path, store }: DemoFileOf): void {
  if (!existsSync(path)) return;
  const recorded = (JSON.parse(readFileSync(path, 'utf8')) as { store?: unknown }).store;
  if (recorded === undefined || recorded === store || recorded === 'memory://') return;
  throw new Error(
    `${path} holds the demo of another store (${String(recorded)}), not of this one (${store}). Start on that store, or move the file away: this store's demo is then written in its place.`,
  );
}
