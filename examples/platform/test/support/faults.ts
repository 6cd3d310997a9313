import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore, type Store } from '@service/core/store';
import {
  type FakeUpstream,
  startFakeUpstream,
} from '../../../../packages/core/test/support/fake-upstream.js';
import {
  createMeteredTenant,
  type MeteredTenant,
  seedProviders,
} from '../../../../packages/core/test/support/metered.js';
import {
  type PostgresCluster,
  startPostgresCluster,
} from '../../../../packages/core/test/support/pg-cluster.js';
import { startPlatform, TEST_ENCRYPTION_KEY } from '../../../../packages/core/test/support/platform.js';
import { createDatabase, makeDataFolder } from '../../../../packages/core/test/support/stores.js';
import { mismatchedDebits } from '../../../../packages/core/test/support/usage-debits.js';
import { bootPlatform, freePort, type PlatformProcess } from './boot.js';

export const START_CREDIT_MICROS = 100_000_000;
/** The log line `main` writes once it serves (the demo is seeded by neither instance here). */
const LISTENING = '"msg":"listening"';

export interface Instance {
  url: string;
  process: PlatformProcess;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL; resolves once gone. */
  kill(): Promise<void>;
  /** Boots it again on the same port, data and journal folders. */
  restart(): Promise<void>;
  /** Its settlement journal folder. */
  journalDir: string;
}

export interface FaultWorld {
  cluster: PostgresCluster;
  upstream: FakeUpstream;
  tenant: MeteredTenant;
  instances: [Instance, Instance];
  books(): Promise<Books>;
  close(): Promise<void>;
}

export interface Books {
  usageRows: number;
  usageMicros: number;
  ledgerUsageMicros: number;
  /** Debits and usage rows that disagree (each debit is the sum of the usage rows naming it). */
  mismatchedDebits: string[];
  walletMicros: number;
  holds: number;
}

/**
 * Without `cluster`, on a cluster of its own (disposed by `close`). With one, on a new database of
 * its own in that cluster, which outlives the world: creating and starting a cluster takes
 * seconds, so a suite shares one. Either way the world may stop and start the cluster.
 */
export async function startFaultWorld(shared?: PostgresCluster): Promise<FaultWorld> {
  const cluster = shared ?? (await startPostgresCluster());
  const dispose = () => (shared ? Promise.resolve() : cluster.dispose());
  const upstream = await startFakeUpstream();
  let store: Store | undefined;
  const folders: string[] = [];
  const instances: Instance[] = [];
  try {
    // Seed through a platform in this process: providers over the stand-in upstream, one tenant.
    const url = shared ? (await createDatabase(shared.url)).url : cluster.url;
    store = await createStore({ url, poolSize: 3 });
    const seeder = await startPlatform(store);
    await seedProviders(seeder.platform, upstream.url);
    const tenant = await createMeteredTenant(seeder.platform, START_CREDIT_MICROS);
    await seeder.close();
    for (let i = 0; i < 2; i++) {
      const cwd = mkdtempSync(join(tmpdir(), `svc-fault-${i}-`));
      folders.push(cwd);
      instances.push(await bootInstance(cwd, await freePort(), { DATABASE_URL: url }));
    }
    const db = store.db;
    const books = () => readBooks(db, tenant.tenantId);
    return {
      cluster,
      upstream,
      tenant,
      instances: instances as [Instance, Instance],
      books,
      close: async () => {
        for (const instance of instances) await instance.kill();
        await store?.close();
        await upstream.close();
        await dispose();
        for (const folder of folders) rmSync(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const instance of instances) await instance.kill();
    await store?.close().catch(() => {});
    await upstream.close();
    await dispose();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

/** The tenant's books as the store holds them. */
async function readBooks(db: Store['db'], tenantId: string): Promise<Books> {
  const usage = await db
    .selectFrom('usage_events')
    .select([(eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('cost_micros').as('sum')])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  const ledger = await db
    .selectFrom('ledger_entries')
    .select((eb) => eb.fn.sum<number>('amount_micros').as('sum'))
    .where('tenant_id', '=', tenantId)
    .where('kind', '=', 'usage')
    .executeTakeFirstOrThrow();
  const wallet = await db
    .selectFrom('wallets')
    .select('balance_micros')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  const holds = await db
    .selectFrom('holds')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return {
    usageRows: Number(usage.n),
    usageMicros: Number(usage.sum ?? 0),
    mismatchedDebits: await mismatchedDebits(db, tenantId),
    ledgerUsageMicros: -Number(ledger.sum ?? 0),
    walletMicros: wallet.balance_micros,
    holds: Number(holds.n),
  };
}

/**
 * One platform process as `pnpm start` runs in production: the embedded store in a data folder
 * (one process at a time), its settlement journal beside it. `books` opens the folder, so only
 * while the instance is stopped.
 */
export interface EmbeddedFaultWorld {
  upstream: FakeUpstream;
  tenant: MeteredTenant;
  instances: [Instance];
  books(): Promise<Books>;
  close(): Promise<void>;
}

/**
 * Starts on a copy of a migrated data folder (`makeDataFolder`): creating and migrating an
 * embedded store takes seconds, and its first boot is not what the fault tests are about.
 */
export async function startEmbeddedFaultWorld(): Promise<EmbeddedFaultWorld> {
  const upstream = await startFakeUpstream();
  const cwd = mkdtempSync(join(tmpdir(), 'svc-fault-embedded-'));
  const dataDir = join(cwd, 'data');
  const instances: Instance[] = [];
  try {
    await makeDataFolder(dataDir);
    const store = await createStore({ dataDir, url: '' });
    let tenant: MeteredTenant;
    try {
      const seeder = await startPlatform(store);
      await seedProviders(seeder.platform, upstream.url);
      tenant = await createMeteredTenant(seeder.platform, START_CREDIT_MICROS);
      await seeder.close();
    } finally {
      await store.close();
    }
    instances.push(
      await bootInstance(cwd, await freePort(), {
        SERVICE_DATA_DIR: dataDir,
        NODE_ENV: 'production',
        // Never asked: no identity token is presented.
        SERVICE_IDP_URL: 'http://127.0.0.1:9',
      }),
    );
    return {
      upstream,
      tenant,
      instances: instances as [Instance],
      books: async () => {
        const reader = await createStore({ dataDir, url: '' });
        try {
          return await readBooks(reader.db, tenant.tenantId);
        } finally {
          await reader.close();
        }
      },
      close: async () => {
        for (const instance of instances) await instance.kill();
        await upstream.close();
        rmSync(cwd, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const instance of instances) await instance.kill();
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
    throw error;
  }
}

async function bootInstance(cwd: string, port: number, store: Record<string, string>): Promise<Instance> {
  const env = {
    ...store,
    PORT: String(port),
    SERVICE_STORE_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    SERVICE_JOURNAL_DIR: join(cwd, 'journal'),
    SERVICE_TELEMETRY_DISABLED: '1',
  };
  const instance: Instance = {
    url: `http://127.0.0.1:${port}`,
    process: await bootPlatform(cwd, env, LISTENING),
    stop: () => instance.process.stop(),
    kill: () =>
      new Promise<void>((resolve) => {
        const { child } = instance.process;
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
    restart: async () => {
      instance.process = await bootPlatform(cwd, env, LISTENING);
    },
    journalDir: env.SERVICE_JOURNAL_DIR,
  };
  return instance;
}

export interface Load {
  /** Calls answered 200 whose whole body arrived. */
  readonly answered: number;
  /** Calls that got any other answer, or none. */
  readonly failed: number;
  /** Calls answered 200 whose body then broke off: an answer cut short. */
  readonly cut: number;
  /** Waits until `answered` reaches `n` (or the timeout passes). */
  until(n: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Metered calls from `callers` concurrent callers, spread over the instances, until stopped. */
export function startLoad(
  world: Pick<FaultWorld, 'instances' | 'tenant'> | EmbeddedFaultWorld,
  callers = 16,
): Load {
  let answered = 0;
  let failed = 0;
  let cut = 0;
  let stopped = false;
  let sent = 0;
  const caller = async (index: number) => {
    while (!stopped) {
      const target = world.instances[(index + sent++) % world.instances.length]!;
      try {
        const response = await fetch(`${target.url}/proxy/llm/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${world.tenant.appKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'demo-small', stream: sent % 2 === 0 }),
        });
        await response.arrayBuffer().catch((error: unknown) => {
          if (response.status === 200) cut++;
          throw error;
        });
        if (response.status === 200) answered++;
        else {
          failed++;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } catch {
        failed++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const callersDone = Promise.all(Array.from({ length: callers }, (_, i) => caller(i)));
  return {
    get answered() {
      return answered;
    },
    get failed() {
      return failed;
    },
    get cut() {
      return cut;
    },
    async until(n, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (answered < n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    async stop() {
      stopped = true;
      await callersDone;
    },
  };
}

/** The books agree with themselves: the wallet moved by the ledger, the ledger matches the usage rows. */
export function booksBalance(books: Books): boolean {
  return (
    books.mismatchedDebits.length === 0 &&
    books.usageMicros === books.ledgerUsageMicros &&
    books.walletMicros === START_CREDIT_MICROS - books.ledgerUsageMicros
  );
}
