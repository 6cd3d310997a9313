/**
 * The platform outlives its database: a platform process under metered load keeps running while
 * PostgreSQL is stopped in immediate mode (a crash, as its clients see it) and started again.
 * While the database is away, calls that need it answer 503 with `Retry-After` in their route's
 * error shape, and `/healthz` answers 503; once it is back, metered calls, balance reads and
 * cross-instance notifications (LISTEN, re-subscribed by the listener) work again.
 *
 * The suite runs a PostgreSQL server of its own (a shared one must not be stopped); it is skipped
 * only when no PostgreSQL server programs are installed.
 *
 * @see docs/storage.md "When the database goes away"
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStoreUnavailable } from '../src/store/availability.js';
import { createStore, type Store } from '../src/store/index.js';
import type { Service } from '../src/wire/create-service.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { POSTGRES_BIN, type PostgresCluster, startPostgresCluster } from './support/pg-cluster.js';
import { type RunningPlatform, startPlatform, TEST_ENCRYPTION_KEY } from './support/platform.js';
import { type ChildServer, spawnPlatform } from './support/spawn.js';
import { openSse } from './support/sse.js';
import { callerFor, ORIGIN, testService } from './wire/support/wire.js';

describe.runIf(POSTGRES_BIN !== null)('the database goes away and comes back (postgres)', () => {
  let cluster: PostgresCluster;
  let store: Store;
  let upstream: FakeUpstream;
  let setup: RunningPlatform;
  let tenant: MeteredTenant;
  let child: ChildServer;
  let wire: Service;
  let output = '';
  /** The child's heartbeat row. */
  let childInstance: string;

  beforeAll(async () => {
    cluster = await startPostgresCluster();
    store = await createStore({ url: cluster.url, poolSize: 4 });
    upstream = await startFakeUpstream();
    setup = await startPlatform(store);
    await seedProviders(setup.platform, upstream.url);
    tenant = await createMeteredTenant(setup.platform, 100_000_000);
    const instances = () => store.db.selectFrom('instances').select('id').execute();
    const before = new Set((await instances()).map((row) => row.id));
    child = await spawnPlatform({
      DATABASE_URL: cluster.url,
      SERVICE_STORE_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    });
    childInstance = (await instances()).find((row) => !before.has(row.id))!.id;
    child.child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    wire = await testService(store, {
      mcp: { productName: 'Outage' },
      oauth: { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) },
      env: { SERVICE_BASE_URL: ORIGIN },
    });
  }, 60_000);
  afterAll(async () => {
    await wire?.close();
    await child?.kill();
    await setup?.close();
    await store?.close();
    await upstream?.close();
    await cluster?.dispose();
  });

  const auth = () => ({ authorization: `Bearer ${tenant.appKey}` });
  /** A metered call; the status, or 0 when no answer came (a refused connection, a hang past 5 s). */
  const search = async (): Promise<Response | null> => {
    try {
      return await fetch(`${child.url}/proxy/search/search`, {
        headers: auth(),
        signal: AbortSignal.timeout(5000),
      });
    } catch {
      return null;
    }
  };

  it('keeps the process alive, answers 503 while the database is away, and recovers', async () => {
    const beforeOutage = await openSse(`${child.url}/api/deployments/me/events`, auth());
    await beforeOutage.waitForComment('connected');

    // Metered load from 16 callers across the whole outage.
    const statuses: number[] = [];
    /** When each 200 was answered. */
    const answeredAt: number[] = [];
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const response = await search();
        statuses.push(response?.status ?? 0);
        if (response?.status === 200) answeredAt.push(Date.now());
        await response?.arrayBuffer().catch(() => {});
        if (response?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (statuses.filter((s) => s === 200).length < 50) await new Promise((r) => setTimeout(r, 5));

    // Stopped just after one of the child's beats landed: it then admits from its lease for 4 s.
    const aliveUntil = async () =>
      (
        await store.db
          .selectFrom('instances')
          .select('alive_until')
          .where('id', '=', childInstance)
          .executeTakeFirstOrThrow()
      ).alive_until.getTime();
    const lastBeat = await aliveUntil();
    while ((await aliveUntil()) === lastBeat) await new Promise((r) => setTimeout(r, 10));
    await cluster.stop('immediate');
    const stoppedAt = Date.now();
    const during: Response[] = [];
    const deadline = Date.now() + 2000;
    while (Date.now() < deadline) {
      const health = await fetch(`${child.url}/healthz`, { signal: AbortSignal.timeout(5000) }).catch(
        (error: unknown) => {
          throw new Error(`the platform process did not answer: ${String(error)}\n${output}`);
        },
      );
      during.push(health);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Calls are admitted from the instance's lease until its last beat that landed is 4 s old,
    // then answered 503.
    let outageCall = await search();
    while (outageCall?.status === 200 && Date.now() < stoppedAt + 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      outageCall = await search();
    }
    const lastServed = Math.max(...answeredAt) - stoppedAt;
    const outageBalance = await fetch(`${child.url}/api/v1/balance`, {
      headers: auth(),
      signal: AbortSignal.timeout(5000),
    });
    // Back before anything is judged, so a failure here leaves the next test a database.
    await cluster.start();

    // The key, tenant status, connection, provider and spend-cap answers read before the outage
    // served the lease's calls past their 2 s lifetime (every one read before the stop has
    // expired 2 s after it): the lease's bound, 4 s after the child's last beat was sent, ended
    // the serving. That beat was sent before it landed, by as long as the child took to land it
    // (a loaded machine: up to a second), so the bound is checked from 2 s on.
    expect(lastServed).toBeGreaterThan(2000);
    expect(lastServed).toBeLessThan(4500);

    expect(child.child.exitCode, output).toBeNull();
    expect(during.at(-1)!.status).toBe(503);
    expect(during.at(-1)!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(outageCall?.status).toBe(503);
    expect(outageCall!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await outageCall!.json()).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(outageCall!.headers.get('service-error-code')).toBe('service_unavailable');
    expect(outageBalance.status).toBe(503);
    expect(await outageBalance.json()).toEqual({ error: { message: expect.any(String) } });

    // Back: health, metered calls and balance reads answer again.
    const recovered = Date.now() + 20_000;
    while ((await fetch(`${child.url}/healthz`)).status !== 200) {
      expect(Date.now()).toBeLessThan(recovered);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const okBefore = statuses.filter((s) => s === 200).length;
    while (statuses.filter((s) => s === 200).length < okBefore + 50) {
      expect(Date.now()).toBeLessThan(recovered);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    stop = true;
    await Promise.all(workers);
    expect(child.child.exitCode, output).toBeNull();
    // Every answer was a 200 or a 503: never a 500, never a dropped connection or a hang.
    expect(new Set(statuses)).toEqual(new Set([200, 503]));
    const balance = await fetch(`${child.url}/api/v1/balance`, { headers: auth() });
    expect(balance.status).toBe(200);

    // LISTEN is back: events caused by another process reach a stream held by the child. The
    // first may also arrive through the re-read every stream gets when the listener reconnects;
    // once it has, only a live LISTEN brings the second within seconds (the heartbeat re-read
    // is 25 s away).
    const afterOutage = await openSse(`${child.url}/api/deployments/me/events`, auth());
    await afterOutage.waitForComment('connected');
    await new Promise((resolve) => setTimeout(resolve, 200)); // the stream's first read is done
    const connect = async () => {
      const connected = await fetch(`${setup.url}/api/connections`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'search' }),
      });
      expect(connected.status).toBe(201);
    };
    // Billing events of calls settled after the outage (from the journal) may arrive too: count
    // only the connection events.
    const connections = () => afterOutage.events.filter((e) => e.event === 'connection.connected').length;
    const waitForConnections = async (count: number) => {
      const until = Date.now() + 5000;
      while (connections() < count) {
        expect(Date.now(), 'a connection event reached the stream').toBeLessThan(until);
        await afterOutage.waitForEvents(afterOutage.events.length + 1, until - Date.now()).catch(() => {});
      }
    };
    await connect();
    await waitForConnections(1);
    await connect();
    await waitForConnections(2);
    afterOutage.close();
    beforeOutage.close();
  }, 60_000);

  it('answers 503 with Retry-After on the wire and the MCP door while the database is away', async () => {
    const ada = callerFor((request) => wire.fetch(request), 'ada');
    const register = () =>
      wire.fetch(
        new Request(`${ORIGIN}/api/service/mcp/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9999/callback'], client_name: 'x' }),
        }),
      );
    expect((await ada('/threads')).status).toBe(200);

    await cluster.stop('immediate');
    let threads: Response;
    let status: Response;
    let registered: Response;
    try {
      threads = await ada('/threads');
      status = await ada('/status');
      registered = await register();
    } finally {
      await cluster.start();
    }
    expect(threads.status).toBe(503);
    expect(threads.headers.get('retry-after')).toBe('2');
    expect(await threads.json()).toEqual({ error: { code: 'unavailable', message: expect.any(String) } });
    expect(status.status).toBe(503);
    expect(status.headers.get('retry-after')).toBe('2');
    expect(registered.status).toBe(503);
    expect(registered.headers.get('retry-after')).toBe('2');
    expect(await registered.json()).toMatchObject({ error: 'temporarily_unavailable' });

    // Back: the pool opens new connections on its own.
    const recovered = Date.now() + 20_000;
    while ((await ada('/threads')).status !== 200) {
      expect(Date.now()).toBeLessThan(recovered);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await register()).status).toBe(201);
  }, 60_000);

  it('fails a statement a hung database leaves unanswered as unavailable, and cuts its connection', async () => {
    const bounded = await createStore({
      url: cluster.url,
      poolSize: 2,
      queryTimeoutMs: 1000,
      migrate: false,
    });
    try {
      await sql`create table if not exists hang_probe (n integer)`.execute(bounded.db);
      // Both connections open: a new one would wait for the hung server to greet it.
      await Promise.all([1, 2].map(() => sql`select pg_sleep(0.05)`.execute(bounded.db)));
      let inTransaction!: () => void;
      const begun = new Promise<void>((resolve) => {
        inTransaction = resolve;
      });
      let frozen!: () => void;
      const freezing = new Promise<void>((resolve) => {
        frozen = resolve;
      });
      // A transaction that wrote a row, then sends a statement into the hang.
      const transaction = bounded.db.transaction().execute(async (trx) => {
        await sql`insert into hang_probe values (1)`.execute(trx);
        inTransaction();
        await freezing;
        await sql`select 1`.execute(trx);
      });
      await begun;
      await cluster.freeze();
      // The hang ends on its own, well after the bound: without it, both statements would wait.
      const thawed = new Promise((resolve) => setTimeout(resolve, 4000)).then(() => cluster.thaw());
      try {
        const started = Date.now();
        frozen();
        const [plain, inTrx] = await Promise.allSettled([sql`select 1`.execute(bounded.db), transaction]);
        const took = Date.now() - started;
        expect(took).toBeLessThan(2500);
        for (const outcome of [plain, inTrx]) {
          expect(outcome.status).toBe('rejected');
          expect(isStoreUnavailable((outcome as PromiseRejectedResult).reason)).toBe(true);
        }
      } finally {
        await thawed;
      }
      // The cut connection took its transaction with it (the server rolled it back), and no
      // statement lands on a connection left inside it: the pool serves from new ones.
      const rows = await Promise.all(
        [1, 2, 3, 4].map(() =>
          sql<{ n: number }>`select count(*)::int as n from hang_probe`.execute(bounded.db),
        ),
      );
      expect(rows.map((r) => r.rows[0]!.n)).toEqual([0, 0, 0, 0]);
    } finally {
      await cluster.thaw();
      await sql`drop table if exists hang_probe`.execute(bounded.db).catch(() => {});
      await bounded.close();
    }
  }, 30_000);

  it('stops within its grace and closes its store while the database hangs', async () => {
    const own = await createStore({ url: cluster.url, poolSize: 4, migrate: false });
    const stopping = await startPlatform(own);
    let frozen = false;
    try {
      const ownTenant = await createMeteredTenant(stopping.platform, 1_000_000);
      // A call admitted in the store leaves a lease to give back when stopping.
      const call = await fetch(`${stopping.url}/proxy/search/search`, {
        headers: { authorization: `Bearer ${ownTenant.appKey}` },
      });
      expect(call.status).toBe(200);
      await call.arrayBuffer();
      await cluster.freeze();
      frozen = true;
      const started = Date.now();
      await stopping.platform.close({ graceMs: 1000 });
      const stopped = Date.now() - started;
      await own.close();
      const closed = Date.now() - started;
      // The grace, 2 s for what is left, and 1 s for the store's connections to be cut: not the
      // 10 s bound of each statement left hanging.
      expect(stopped).toBeLessThan(4000);
      expect(closed - stopped).toBeLessThan(2000);
    } finally {
      if (frozen) await cluster.thaw();
      await stopping.close().catch(() => {});
      await own.close().catch(() => {});
    }
  }, 30_000);
});
