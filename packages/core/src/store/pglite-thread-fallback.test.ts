import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStore } from './create-store.js';
import { openPGliteThread } from './pglite-thread.js';

// A host's bundle (Next.js) can leave PGlite where a worker thread cannot load it.
vi.mock('./pglite-thread.js', () => ({
  openPGliteThread: vi.fn(async () => {
    throw new Error("Cannot find module '@electric-sql/pglite'");
  }),
}));

describe('the embedded store when its thread cannot start', () => {
  const folders: string[] = [];
  afterEach(() => {
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  });

  it('runs inline on the same folder, keeps its data across a reopen, and holds the folder once', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'store-fallback-'));
    folders.push(folder);
    const dataDir = join(folder, 'data');

    const store = await createStore({ dataDir, url: '' });
    expect(vi.mocked(openPGliteThread)).toHaveBeenCalledWith(dataDir);
    expect(store.embedded).toBe('inline');
    await sql`create table kept (n int)`.execute(store.db);
    await sql`insert into kept values (7)`.execute(store.db);
    // One owner of the folder, as on the thread: a second store is refused, not let in.
    await expect(createStore({ dataDir, url: '' })).rejects.toThrow(/is in use by process/);
    await store.close();
    expect(existsSync(`${dataDir}.lock`)).toBe(false);

    const reopened = await createStore({ dataDir, url: '' });
    try {
      const { rows } = await sql<{ n: number }>`select n from kept`.execute(reopened.db);
      expect(rows).toEqual([{ n: 7 }]);
    } finally {
      await reopened.close();
    }
  });
});
