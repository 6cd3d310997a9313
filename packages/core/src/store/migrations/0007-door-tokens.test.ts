/**
 * Upgrading a store whose door rows predate doors being told apart: clients, consents and
 * sessions take the door of the authorizations that use them, and what no authorization ties to
 * a door is left unbound (clients) or dropped (consents backing no token).
 */
import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../create-store.js';
import { MIGRATIONS } from './index.js';

const DOOR_A = 'https://a.example/api/service/mcp';
const DOOR_B = 'https://b.example/api/service/mcp';

describe('0007-door-tokens on a store with door rows', () => {
  let store: Store;

  beforeAll(async () => {
    store = await createStore({ url: 'memory://', migrate: false });
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => MIGRATIONS } });
    const before = await migrator.migrateTo('0006-instances');
    if (before.error) throw before.error;
    await sql`
      insert into door_clients (client_id, redirect_uris, metadata)
        values ('client-a', '[]', '{}'), ('client-b', '[]', '{}'), ('client-idle', '[]', '{}');
      insert into door_grant_families (id, client_id, subject, scopes, resource) values
        ('00000000-0000-4000-8000-000000000001', 'client-a', 'ada', 'read', ${sql.lit(DOOR_A)}),
        ('00000000-0000-4000-8000-000000000002', 'client-b', 'bob', 'read', ${sql.lit(DOOR_B)});
      insert into door_consents (subject, client_id, scopes)
        values ('ada', 'client-a', 'read'), ('cy', 'client-a', 'read'), ('dee', 'client-idle', 'read');
      insert into door_sessions (id_hash, subject, client_id) values ('session-a', 'ada', 'client-a');
    `.execute(store.db);
    const after = await migrator.migrateToLatest();
    if (after.error) throw after.error;
  });
  afterAll(async () => store?.close());

  it('gives clients the door of their authorizations and leaves one nobody authorized unbound', async () => {
    const clients = await store.db.selectFrom('door_clients').select(['client_id', 'resource']).execute();
    expect(Object.fromEntries(clients.map((c) => [c.client_id, c.resource]))).toEqual({
      'client-a': DOOR_A,
      'client-b': DOOR_B,
      'client-idle': null,
    });
  });

  it("gives consents their client's door and drops the ones tied to no door", async () => {
    const consents = await store.db
      .selectFrom('door_consents')
      .select(['subject', 'client_id', 'resource'])
      .orderBy('subject')
      .execute();
    expect(consents).toEqual([
      { subject: 'ada', client_id: 'client-a', resource: DOOR_A },
      { subject: 'cy', client_id: 'client-a', resource: DOOR_A },
    ]);
  });

  it("gives sessions their client's door", async () => {
    const session = await store.db.selectFrom('door_sessions').select('resource').executeTakeFirst();
    expect(session?.resource).toBe(DOOR_A);
  });
});
