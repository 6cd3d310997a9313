/**
 * The store suite: runs on embedded PGlite always and on Postgres when DATABASE_URL is set.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDataFolder, openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { createStore, createStoreImage, migrateToLatest, resolveDataDir } from './create-store.js';
import { parseInt8 } from './int8.js';
import { MIGRATIONS } from './migrations/index.js';

for (const kind of STORE_KINDS) {
  describe(`store (${kind})`, () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    it('creates every table of the foundation schema', async () => {
      const tables = await sql<{ table_name: string }>`
        select table_name from information_schema.tables where table_schema = 'public' order by table_name`.execute(
        store.db,
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining([
          'api_keys',
          'apps',
          'connections',
          'dev_idp_keys',
          'integrations',
          'ledger_entries',
          'memberships',
          'rate_limit_hits',
          'sessions',
          'tenants',
          'users',
          'wallets',
        ]),
      );
    });

    it('re-running migrations is a no-op', async () => {
      await migrateToLatest(store.db);
      await migrateToLatest(store.db);
    });

    it('reads int8 money columns as exact numbers', async () => {
      const tenant = await store.db
        .insertInto('tenants')
        .values({ name: 't' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await store.db
        .insertInto('wallets')
        .values({ tenant_id: tenant.id, balance_micros: Number.MAX_SAFE_INTEGER })
        .execute();
      const wallet = await store.db
        .selectFrom('wallets')
        .select('balance_micros')
        .where('tenant_id', '=', tenant.id)
        .executeTakeFirstOrThrow();
      expect(wallet.balance_micros).toBe(Number.MAX_SAFE_INTEGER);
    });

    it('refuses to update or delete ledger entries', async () => {
      const tenant = await store.db
        .insertInto('tenants')
        .values({ name: 'ledger' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await store.db
        .insertInto('ledger_entries')
        .values({
          tenant_id: tenant.id,
          amount_micros: 1,
          kind: 'grant',
          idempotency_key: 'k',
          balance_after_micros: 1,
        })
        .execute();
      await expect(
        store.db
          .updateTable('ledger_entries')
          .set({ amount_micros: 2 })
          .where('tenant_id', '=', tenant.id)
          .execute(),
      ).rejects.toThrow(/append-only/);
      await expect(
        store.db.deleteFrom('ledger_entries').where('tenant_id', '=', tenant.id).execute(),
      ).rejects.toThrow(/append-only/);
    });

    it('keeps transactions of concurrent callers apart', async () => {
      const tenant = await store.db
        .insertInto('tenants')
        .values({ name: 'tx' })
        .returning('id')
        .executeTakeFirstOrThrow();
      // One transaction fails after writing; the others must neither see nor lose their own rows.
      const attempts = Array.from({ length: 10 }, (_, i) =>
        store.db.transaction().execute(async (trx) => {
          await trx
            .insertInto('apps')
            .values({ tenant_id: tenant.id, slug: `app-${i}`, name: 'x' })
            .execute();
          if (i === 3) throw new Error('abort');
        }),
      );
      const results = await Promise.allSettled(attempts);
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
      const apps = await store.db
        .selectFrom('apps')
        .select('slug')
        .where('tenant_id', '=', tenant.id)
        .execute();
      expect(apps.map((a) => a.slug).sort()).toEqual([
        'app-0',
        'app-1',
        'app-2',
        'app-4',
        'app-5',
        'app-6',
        'app-7',
        'app-8',
        'app-9',
      ]);
    });

    if (kind === 'postgres') {
      it('serialises migrations of processes starting together on an empty database', async () => {
        const fresh = await openTestStore('postgres');
        try {
          await sql`drop schema public cascade; create schema public;`.execute(fresh.db);
          const racers = await Promise.all(
            Array.from({ length: 4 }, () => createStore({ url: fresh.url!, poolSize: 2 })),
          );
          await Promise.all(racers.map((r) => r.close()));
          const count = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(
            fresh.db,
          );
          expect(count.rows[0]?.n).toBe(Object.keys(MIGRATIONS).length);
        } finally {
          await fresh.dispose();
        }
      });
    }
  });
}

describe('embedded data folder', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('persists across reopen and refuses a second open in the same process', async () => {
    // A migrated folder, copied: creating and migrating one on disk is what
    // pglite-thread-fallback.test.ts does first, and here would cost seconds more.
    const dataDir = join(dir, 'same-process');
    await makeDataFolder(dataDir);
    const first = await createStore({ dataDir, url: '' });
    await first.db.insertInto('tenants').values({ name: 'kept' }).execute();
    await expect(createStore({ dataDir, url: '' })).rejects.toThrow(/in use by process/);
    await first.close();
    const again = await createStore({ dataDir, url: '' });
    const rows = await again.db.selectFrom('tenants').select('name').execute();
    expect(rows.map((r) => r.name)).toEqual(['kept']);
    await again.close();
  });

  it('refuses a folder another live process holds, and takes over once that process is killed', async () => {
    const dataDir = join(dir, 'other-process');
    // A migrated folder: the holder only opens it (migrating it is not what this is about).
    await makeDataFolder(dataDir);
    const storeModule = fileURLToPath(new URL('./index.ts', import.meta.url));
    const holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `const { createStore } = await import(${JSON.stringify(storeModule)}); await createStore({ dataDir: ${JSON.stringify(dataDir)}, url: '', migrate: false }); console.log('ready'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        holder.on('exit', (code) => reject(new Error(`holder exited with ${code}`)));
      });
      await expect(createStore({ dataDir, url: '' })).rejects.toThrow(
        new RegExp(`in use by process ${holder.pid}`),
      );
    } finally {
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    const taken = await createStore({ dataDir, url: '' });
    await taken.close();
  });
});

describe('store configuration', () => {
  const saved = { DATABASE_URL: process.env.DATABASE_URL, SERVICE_DATA_DIR: process.env.SERVICE_DATA_DIR };
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('refuses a DATABASE_URL that is not a Postgres URL, naming the variable and not the password', async () => {
    process.env.DATABASE_URL = 'postgress://u:hunter2@db:5432/app';
    const refused = createStore({ migrate: false });
    await expect(refused).rejects.toThrow(
      /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL.*postgress:/,
    );
    await expect(refused).rejects.not.toThrow(/hunter2/);
    await expect(createStore({ url: 'db:5432', migrate: false })).rejects.toThrow(/store url must be/);
  });

  it('says the store could not be reached, not that a migration failed, when nothing answers', async () => {
    const refused = createStore({ url: 'postgres://u:hunter2@127.0.0.1:1/app', connectTimeoutMs: 2000 });
    await expect(refused).rejects.toThrow(/^The store could not be reached: .*ECONNREFUSED/);
    await expect(refused).rejects.not.toThrow(/hunter2/);
  });

  it('counts a blank DATABASE_URL or SERVICE_DATA_DIR as unset', async () => {
    process.env.DATABASE_URL = ' ';
    process.env.SERVICE_DATA_DIR = ' ';
    expect(resolveDataDir()).toBe(join(process.cwd(), '.service/data'));
    expect(resolveDataDir('')).toBe(join(process.cwd(), '.service/data'));
    const folder = mkdtempSync(join(tmpdir(), 'svc-store-blank-'));
    const dataDir = join(folder, 'data');
    await makeDataFolder(dataDir);
    const store = await createStore({ dataDir, migrate: false });
    try {
      expect(store.kind).toBe('pglite');
    } finally {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('embedded store inline', () => {
  it('lets the event loop turn between the statements of a long transaction', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'svc-store-inline-'));
    await makeDataFolder(join(folder, 'data'));
    const store = await createStore({
      url: '',
      dataDir: join(folder, 'data'),
      embedded: 'inline',
      migrate: false,
    });
    try {
      const slow = sql`select count(*) from generate_series(1, 200000)`;
      const started = performance.now();
      await slow.execute(store.db);
      // Each statement holds the thread for milliseconds: more than the store's 1 ms.
      expect(performance.now() - started).toBeGreaterThan(1);
      let turns = 0;
      let ended = false;
      const count = () => {
        if (ended) return;
        turns += 1;
        setImmediate(count);
      };
      setImmediate(count);
      await store.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 6; i++) await slow.execute(trx);
      });
      ended = true;
      // Without sharing, the six statements run in microtasks, one after the other: no turn at all.
      expect(turns).toBeGreaterThanOrEqual(5);
    } finally {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('a memory store from an image', () => {
  it('starts migrated and empty, each store its own copy', async () => {
    const image = await createStoreImage();
    const first = await createStore({ url: 'memory://', image });
    const second = await createStore({ url: 'memory://', image });
    try {
      const ran = sql<{ name: string }>`select name from kysely_migration order by name`;
      expect((await ran.execute(first.db)).rows.map((r) => r.name)).toEqual(Object.keys(MIGRATIONS).sort());
      await first.db.insertInto('tools').values({ slug: 'only-here', name: 'Only here' }).execute();
      expect(await second.db.selectFrom('tools').select('slug').execute()).toEqual([]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('parseInt8', () => {
  it('refuses values a number cannot hold exactly', () => {
    expect(parseInt8('9007199254740991')).toBe(9007199254740991);
    expect(parseInt8('-42')).toBe(-42);
    expect(() => parseInt8('9007199254740993')).toThrow(RangeError);
  });
});
