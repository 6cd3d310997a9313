/**
 * The platform outlives its embedded store's thread: under metered load, the thread the embedded
 * store runs on stops (as a WebAssembly abort ends it). Calls answer 200 from the instance's lease
 * or 503 meanwhile, never a 500 or a dropped connection; the store starts again on its folder a
 * second later, and every answered call is billed once, the books agreeing. A creating request
 * the stop cut leaves its Idempotency-Key free to retry (afresh, or replaying what it made), a
 * dashboard form it cut acts when sent again, and a store closed while its thread is down lets go
 * of its folder.
 *
 * @see docs/storage.md "The embedded store"
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createStore, type Store } from '../src/store/index.js';
import { engineThreads } from './support/engine-threads.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, signedInOwner, startPlatform } from './support/platform.js';
import { makeDataFolder } from './support/stores.js';
import { mismatchedDebits } from './support/usage-debits.js';

vi.mock('node:worker_threads', async (original) =>
  (await import('./support/engine-threads.js')).recordingWorkers(await original()),
);

describe('the embedded store’s thread stops under metered load', () => {
  const START = 100_000_000;
  let folder: string;
  let store: Store;
  let upstream: FakeUpstream;
  let platform: RunningPlatform;
  let tenant: MeteredTenant;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'svc-thread-restart-'));
    // A migrated folder from the suite's image: creating one (initdb) costs seconds of CPU, and
    // this is about what happens once the store runs on it.
    await makeDataFolder(join(folder, 'data'));
    store = await createStore({ dataDir: join(folder, 'data'), url: '' });
    expect(store.embedded).toBe('thread');
    upstream = await startFakeUpstream();
    platform = await startPlatform(store, { journalDir: join(folder, 'journal') }, 'node');
    await seedProviders(platform.platform, upstream.url);
    tenant = await createMeteredTenant(platform.platform, START);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    await store?.close();
    await upstream?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('answers 200 or 503 meanwhile, comes back, and bills every answered call once', async () => {
    const statuses: number[] = [];
    let stop = false;
    const caller = async () => {
      while (!stop) {
        const response = await fetch(`${platform.url}/proxy/search/search`, {
          headers: { authorization: `Bearer ${tenant.appKey}` },
          signal: AbortSignal.timeout(10_000),
        }).catch(() => null);
        statuses.push(response?.status ?? 0);
        await response?.arrayBuffer().catch(() => {});
        if (response?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const answered = () => statuses.filter((status) => status === 200).length;
    const callers = Array.from({ length: 8 }, caller);
    while (answered() < 50) await new Promise((resolve) => setTimeout(resolve, 5));

    await engineThreads.at(-1)!.terminate();
    const health = () => fetch(`${platform.url}/healthz`).then((response) => response.status);
    expect(await health()).toBe(503);
    // The store starts its thread again a second later; calls then go on being answered by it.
    await vi.waitFor(async () => expect(await health()).toBe(200), { timeout: 20_000, interval: 50 });
    const afterRestart = answered();
    await vi.waitFor(() => expect(answered()).toBeGreaterThan(afterRestart + 50), {
      timeout: 20_000,
      interval: 50,
    });
    stop = true;
    await Promise.all(callers);
    // Admitted from the lease while the store was away, or refused with 503: never a 500, never
    // a dropped connection.
    for (const status of statuses) expect([200, 503]).toContain(status);

    // Every answered call is billed, once: the books settle to exactly the 200s.
    const billed = async () =>
      Number(
        (
          await store.db
            .selectFrom('usage_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('tenant_id', '=', tenant.tenantId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    await vi.waitFor(async () => expect(await billed()).toBe(answered()), { timeout: 20_000, interval: 100 });
    const wallet = await store.db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    expect(wallet.balance_micros).toBe(START - answered() * 1200);
    expect(await mismatchedDebits(store.db, tenant.tenantId)).toEqual([]);
  }, 90_000);

  it('lets an Idempotency-Key whose request the stop cut be retried: afresh, or replayed', async () => {
    const records = platform.platform.context.idempotency;
    const health = () => fetch(`${platform.url}/healthz`).then((response) => response.status);
    const connect = (key: string) =>
      fetch(`${platform.url}/api/connections`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.appKey}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ provider: 'search' }),
      });
    /** The key's request sent again as a client does, after each `Retry-After`, for up to 10 s. */
    const retried = async (key: string) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const response = await connect(key);
        const retryAfter = response.headers.get('retry-after');
        if (retryAfter === null || Date.now() > until) return response;
        await response.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, Number(retryAfter) * 1000));
      }
    };
    /** Stops the thread just after the request reserved its key, or just before it keeps its answer. */
    const stopAt = (step: 'reserve' | 'complete') => {
      const original = records[step].bind(records) as (...args: unknown[]) => Promise<unknown>;
      const stop = () => engineThreads.at(-1)!.terminate();
      (records as unknown as Record<string, unknown>)[step] = async (...args: unknown[]) => {
        (records as unknown as Record<string, unknown>)[step] = original;
        if (step === 'complete') await stop();
        const done = await original(...args);
        if (step === 'reserve') await stop();
        return done;
      };
    };

    // Cut after the key was reserved: the request never ran.
    stopAt('reserve');
    expect((await connect('cut-before')).status).toBe(503);
    await vi.waitFor(async () => expect(await health()).toBe(200), { timeout: 20_000, interval: 50 });
    const afresh = await retried('cut-before');
    expect(afresh.status).toBe(201);
    expect(afresh.headers.get('idempotent-replayed')).toBeNull();

    // Cut after the connection was made, before its answer was kept: the retry replays it.
    stopAt('complete');
    expect((await connect('cut-after')).status).toBe(503);
    await vi.waitFor(async () => expect(await health()).toBe(200), { timeout: 20_000, interval: 50 });
    const replayed = await retried('cut-after');
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  }, 60_000);

  it('lets a dashboard form the stop cut be sent again: it acts, rather than being taken for a repeat', async () => {
    const owner = await signedInOwner(platform, 'form-cut@example.test');
    const page = await (await fetch(`${platform.url}/keys`, { headers: { cookie: owner.cookie } })).text();
    const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(page)![1]!;
    const fields = {
      _csrf: hidden('_csrf'),
      _action: 'create',
      nonce: hidden('nonce'),
      kind: 'app',
      app: owner.appId,
    };
    const send = () =>
      fetch(`${platform.url}/keys`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: owner.cookie,
          origin: platform.url,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams(fields).toString(),
      });
    // The thread stops once the form's nonce is reserved, before the key is made.
    const records = platform.platform.context.idempotency;
    const reserve = records.reserve.bind(records);
    records.reserve = async (...args) => {
      records.reserve = reserve;
      const reserved = await reserve(...args);
      await engineThreads.at(-1)!.terminate();
      return reserved;
    };
    const cut = await send();
    expect(cut.status).toBe(503);
    await vi.waitFor(async () => expect((await fetch(`${platform.url}/healthz`)).status).toBe(200), {
      timeout: 20_000,
      interval: 50,
    });
    // Sent again after the Retry-After it was given, the form makes the key.
    await new Promise((resolve) => setTimeout(resolve, Number(cut.headers.get('retry-after') ?? 2) * 1000));
    const again = await send();
    expect(again.status).toBe(200);
    expect(await again.text()).toMatch(/id="new-key">service_sk_/);
  }, 60_000);
});

describe('the embedded store closed while its thread is down', () => {
  it('closes, and lets go of its folder', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'svc-thread-close-'));
    try {
      const dataDir = join(folder, 'data');
      await makeDataFolder(dataDir);
      const store = await createStore({ dataDir, url: '' });
      await store.db.schema.createTable('kept').addColumn('n', 'integer').execute();
      await store.db
        .insertInto('kept' as never)
        .values({ n: 1 } as never)
        .execute();
      // Stopped, as a WebAssembly abort stops it; a shutdown (SIGTERM) comes before it starts again.
      await engineThreads.at(-1)!.terminate();
      await store.close();
      // The folder is free again: this process opens it, with what was committed.
      const reopened = await createStore({ dataDir, url: '' });
      try {
        expect(
          await reopened.db
            .selectFrom('kept' as never)
            .selectAll()
            .execute(),
        ).toEqual([{ n: 1 }]);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
