/**
 * The LISTEN connection on Postgres: when it is lost (here: terminated by the server, as a
 * restart or a failover would), it is re-opened, every channel is LISTENed again, and each
 * handler is told (`null`) that notifications may have been missed. (Postgres only.)
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { createPostgresListener, LISTENER_APPLICATION_NAME } from './listener.js';

describe.runIf(STORE_KINDS.includes('postgres'))('Postgres listener', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(async () => store?.dispose());

  const until = async (ready: () => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const notify = (channel: string, payload: string) =>
    sql`select pg_notify(${channel}, ${payload})`.execute(store.db);

  it('re-opens a lost connection, LISTENs on every channel again and tells each handler', async () => {
    const listener = createPostgresListener(store.url!, { minRetryMs: 20 });
    const heard: Array<[string, string | null]> = [];
    await listener.listen('outage_a', (payload) => heard.push(['a', payload]));
    await listener.listen('outage_b', (payload) => heard.push(['b', payload]));
    try {
      await notify('outage_a', 'before');
      await until(() => heard.length === 1);

      const { rows } = await sql<{ ended: boolean }>`
        select pg_terminate_backend(pid) as ended from pg_stat_activity
        where application_name = ${LISTENER_APPLICATION_NAME} and datname = current_database()`.execute(
        store.db,
      );
      expect(rows).toEqual([{ ended: true }]);
      await until(() => heard.length === 3);
      expect(heard.slice(1).sort()).toEqual([
        ['a', null],
        ['b', null],
      ]);

      await notify('outage_a', 'after');
      await notify('outage_b', 'after');
      await until(() => heard.length === 5);
      expect(heard.slice(3).sort()).toEqual([
        ['a', 'after'],
        ['b', 'after'],
      ]);
    } finally {
      await listener.close();
    }
  });

  it('refuses a subscription it cannot make within the connect timeout, rather than waiting', async () => {
    const unreachable = new URL(store.url!);
    unreachable.port = '1'; // nothing listens there
    const listener = createPostgresListener(unreachable.toString(), { connectTimeoutMs: 1000 });
    await expect(listener.listen('outage_c', () => {})).rejects.toThrow();
    await listener.close();
  });
});
