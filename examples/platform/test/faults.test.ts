/**
 * Every answered metered call is billed exactly once, whatever happens to a process or the
 * database: two platform processes on one PostgreSQL cluster under load, then a SIGTERM (a
 * deploy), a SIGKILL (a crash) or a PostgreSQL stop in immediate mode and restart (a failover);
 * and one process on the embedded store in its data folder (`pnpm start` in production), stopped
 * or killed and started again. The PostgreSQL suite needs the server programs (CI installs them);
 * the cluster is the test's own.
 *
 * @see docs/billing.md "Settlement journal", "Stopping"
 */
import { readdirSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  POSTGRES_BIN,
  type PostgresCluster,
  startPostgresCluster,
} from '../../../packages/core/test/support/pg-cluster.js';
import {
  booksBalance,
  type EmbeddedFaultWorld,
  type FaultWorld,
  startEmbeddedFaultWorld,
  startFaultWorld,
  startLoad,
} from './support/faults.js';

const segmentsIn = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.jsonl'));

/** `startLoad`'s callers: the most calls a kill can cut in flight. */
const LOAD_CALLERS = 16;

/**
 * Answered calls before a fault, and after it: with 16 callers in flight throughout, a few dozen
 * answers each side put the fault in the middle of steady traffic.
 */
const WARM = 75;
const AFTER = 50;

describe.runIf(POSTGRES_BIN !== null)('faults under load (postgres, two processes)', () => {
  // One cluster for the suite (each world has a database of its own in it): creating and starting
  // a cluster takes seconds. The outage test stops and starts it as before.
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.dispose();
  });
  let world: FaultWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  it('bills every answered call when an instance gets SIGTERM mid-load, and gives its lease back', async () => {
    world = await startFaultWorld(cluster);
    const [first, second] = world.instances;
    const load = startLoad(world);
    await load.until(WARM);
    expect(await first.stop()).toBe(0);
    const atStop = load.answered;
    await load.until(atStop + AFTER);
    await load.stop();
    expect(await second.stop()).toBe(0);

    const books = await world.books();
    // A SIGTERM cuts no answer short: calls in flight finish, new ones are refused or go elsewhere.
    expect(load.cut).toBe(0);
    expect(load.answered).toBeGreaterThan(atStop);
    expect(books.usageRows).toBe(load.answered);
    expect(booksBalance(books)).toBe(true);
    // Both stopped cleanly: no hold or lease of theirs is left counting against the balance.
    expect(books.holds).toBe(0);
  }, 120_000);

  it('bills every answered call when an instance is killed (SIGKILL) mid-load and boots again', async () => {
    world = await startFaultWorld(cluster);
    const [first, second] = world.instances;
    const load = startLoad(world);
    await load.until(WARM);
    // No shutdown of any kind: every call it answered is in its journal, settled at its next boot.
    await first.kill();
    // Its segments: taken over (renamed) by the next instance on this folder once the killed
    // one's heartbeat row has lapsed and the new one beats steadily (about 6 s each).
    const orphans = segmentsIn(first.journalDir);
    await load.until(load.answered + AFTER);
    await first.restart();
    await load.until(load.answered + AFTER);
    const deadline = Date.now() + 30_000;
    while (segmentsIn(first.journalDir).some((name) => orphans.includes(name)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(segmentsIn(first.journalDir).filter((name) => orphans.includes(name))).toEqual([]);
    await load.stop();
    for (const instance of [first, second]) {
      const code = await instance.stop();
      expect(code, instance.process.output().slice(-3000)).toBe(0);
    }

    const books = await world.books();
    // Every call answered whole is billed; a call cut by the kill after its record was durable is
    // billed too (its upstream call was made): at most one per caller in flight (docs/billing.md).
    expect(books.usageRows).toBeGreaterThanOrEqual(load.answered);
    expect(books.usageRows - load.answered).toBeLessThanOrEqual(LOAD_CALLERS);
    expect(booksBalance(books)).toBe(true);
  }, 120_000);

  it('bills every answered call across a PostgreSQL stop (immediate) and restart mid-load', async () => {
    world = await startFaultWorld(cluster);
    const load = startLoad(world);
    await load.until(WARM);
    await world.cluster.stop('immediate');
    const atOutage = load.answered;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const duringOutage = load.answered - atOutage;
    await world.cluster.start();
    await load.until(load.answered + WARM);
    await load.stop();
    for (const instance of world.instances) {
      const code = await instance.stop();
      expect(code, instance.process.output().slice(-3000)).toBe(0);
    }

    const books = await world.books();
    expect(books.usageRows).toBe(load.answered);
    expect(booksBalance(books)).toBe(true);
    // Calls were answered from leases while the database was away, and billed after.
    expect(duringOutage).toBeGreaterThan(0);
  }, 120_000);
});

describe('faults under load (the embedded store, one process)', () => {
  let world: EmbeddedFaultWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  it('bills every answered call when the instance gets SIGTERM mid-load and is started again', async () => {
    world = await startEmbeddedFaultWorld();
    const [instance] = world.instances;
    const load = startLoad(world);
    await load.until(WARM);
    expect(await instance.stop(), instance.process.output().slice(-3000)).toBe(0);
    const atStop = load.answered;
    await instance.restart();
    await load.until(atStop + AFTER);
    await load.stop();
    expect(await instance.stop(), instance.process.output().slice(-3000)).toBe(0);

    const books = await world.books();
    // A SIGTERM cuts no answer short: calls in flight finish, new ones are refused until the restart.
    expect(load.cut).toBe(0);
    expect(load.answered).toBeGreaterThanOrEqual(atStop + AFTER);
    expect(books.usageRows).toBe(load.answered);
    expect(booksBalance(books)).toBe(true);
    expect(books.holds).toBe(0);
  }, 120_000);

  it('bills every answered call when the instance is killed (SIGKILL) mid-load and boots again on its folder', async () => {
    world = await startEmbeddedFaultWorld();
    const [instance] = world.instances;
    const load = startLoad(world);
    await load.until(WARM);
    // No shutdown of any kind: the data folder is recovered from its write-ahead log, and the
    // calls answered but not yet settled are in the journal, settled by the next boot.
    await instance.kill();
    const orphans = segmentsIn(instance.journalDir);
    const atKill = load.answered;
    await instance.restart();
    await load.until(atKill + AFTER);
    const deadline = Date.now() + 30_000;
    while (segmentsIn(instance.journalDir).some((name) => orphans.includes(name)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(segmentsIn(instance.journalDir).filter((name) => orphans.includes(name))).toEqual([]);
    await load.stop();
    expect(await instance.stop(), instance.process.output().slice(-3000)).toBe(0);

    const books = await world.books();
    expect(load.answered).toBeGreaterThanOrEqual(atKill + AFTER);
    expect(books.usageRows).toBeGreaterThanOrEqual(load.answered);
    expect(books.usageRows - load.answered).toBeLessThanOrEqual(LOAD_CALLERS);
    expect(booksBalance(books)).toBe(true);
  }, 120_000);
});
