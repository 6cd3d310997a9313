/**
 * Money survives a crash: a platform process is killed with SIGKILL in the middle of a metered
 * load on Postgres; after a restart the ledger, the wallet and the usage rows agree, and nothing
 * is half-written. (Postgres only: the embedded store admits one process.)
 *
 * @see docs/billing.md "Crash safety"
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatform, TEST_ENCRYPTION_KEY } from './support/platform.js';
import { type ChildServer, spawnPlatform } from './support/spawn.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';
import { mismatchedDebits } from './support/usage-debits.js';

describe.runIf(STORE_KINDS.includes('postgres'))('crash safety (postgres)', () => {
  let store: TestStore;
  let upstream: FakeUpstream;
  let setup: RunningPlatform;
  let tenant: MeteredTenant;
  let child: ChildServer | undefined;
  const START = 100_000_000;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    upstream = await startFakeUpstream();
    setup = await startPlatform(store);
    await seedProviders(setup.platform, upstream.url);
    tenant = await createMeteredTenant(setup.platform, START);
  });
  afterAll(async () => {
    await child?.kill();
    await setup?.close();
    await upstream?.close();
    await store?.dispose();
  });

  const processEnv = () => ({ DATABASE_URL: store.url!, SERVICE_STORE_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY });

  it('keeps the ledger, the wallet and the usage rows in agreement across a SIGKILL mid-load', async () => {
    child = await spawnPlatform(processEnv());
    const target = child;
    let done = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const response = await fetch(`${target.url}/proxy/llm/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'demo-small', stream: done % 2 === 0 }),
          });
          await response.arrayBuffer();
          done++;
        } catch {
          return; // The server is gone.
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (done < 150) await new Promise((resolve) => setTimeout(resolve, 5));
    await target.kill();
    stop = true;
    await Promise.all(workers);

    child = await spawnPlatform(processEnv());
    const answered = done;
    const after = await fetch(`${child.url}/proxy/search/search`, {
      headers: { authorization: `Bearer ${tenant.appKey}` },
    });
    expect(after.status).toBe(200);
    await after.arrayBuffer();

    const wallet = await store.db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    const ledger = await store.db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.sum<number>('amount_micros').as('sum'))
      .where('tenant_id', '=', tenant.tenantId)
      .where('kind', '=', 'usage')
      .executeTakeFirstOrThrow();
    const usage = await store.db
      .selectFrom('usage_events')
      .select([(eb) => eb.fn.sum<number>('cost_micros').as('sum'), (eb) => eb.fn.countAll<number>().as('n')])
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    // Answered calls settle within 50 ms, in batches: a crash may leave the last of them unbilled
    // (never billed twice, never half-written).
    expect(Number(usage.n)).toBeGreaterThan(0);
    expect(Number(usage.n)).toBeLessThanOrEqual(answered + 16 + 1);
    expect(-Number(ledger.sum)).toBe(Number(usage.sum));
    expect(wallet.balance_micros).toBe(START + Number(ledger.sum));
    // Each debit is exactly the usage rows that name it, and every usage row names one.
    expect(await mismatchedDebits(store.db, tenant.tenantId)).toEqual([]);
    // Each usage row's event numbers are whole: the app's counter matches its last logged event.
    const app = await store.db
      .selectFrom('apps')
      .select('event_seq')
      .where('id', '=', tenant.appId)
      .executeTakeFirstOrThrow();
    const last = await store.db
      .selectFrom('app_events')
      .select((eb) => eb.fn.max('seq').as('max'))
      .where('app_id', '=', tenant.appId)
      .executeTakeFirstOrThrow();
    expect(Number(last.max)).toBe(app.event_seq);
  });
  it('bills every answered call when the journal folder is removed mid-load and the process is then killed', async () => {
    const journalDir = join(mkdtempSync(join(tmpdir(), 'svc-crash-')), 'journal');
    const payer = await createMeteredTenant(setup.platform, START);
    const env = { ...processEnv(), SERVICE_JOURNAL_DIR: journalDir };
    // The test before left its restarted process running: this one takes its place.
    await child?.kill();
    child = await spawnPlatform(env);
    const target = child;
    let answered = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const response = await fetch(`${target.url}/proxy/search/search`, {
            headers: { authorization: `Bearer ${payer.appKey}` },
          });
          await response.arrayBuffer();
          if (response.status === 200) answered++;
        } catch {
          return; // The server is gone.
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (answered < 100) await new Promise((resolve) => setTimeout(resolve, 5));
    rmSync(journalDir, { recursive: true, force: true });
    const removedAt = answered;
    while (answered < removedAt + 200) await new Promise((resolve) => setTimeout(resolve, 5));
    await target.kill();
    stop = true;
    await Promise.all(workers);

    // The next instance on the folder takes over the dead one's segments once its heartbeat lapses.
    child = await spawnPlatform(env);
    const billed = async () =>
      Number(
        (
          await store.db
            .selectFrom('usage_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('tenant_id', '=', payer.tenantId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const deadline = Date.now() + 30_000;
    while ((await billed()) < answered && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await billed()).toBeGreaterThanOrEqual(answered);
    rmSync(join(journalDir, '..'), { recursive: true, force: true });
  }, 60_000);
});
