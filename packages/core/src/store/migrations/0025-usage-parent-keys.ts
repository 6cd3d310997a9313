import { type Kysely, sql } from 'kysely';

/**
 * A usage row's tenant, app, connection and key are kept without foreign keys.
 *
 * - A call is billed even when its app (and with it its keys) or its connection is deleted
 *   between the answer and the settlement (the batch's 50 ms, or a journal replayed later). A
 *   foreign key refused such a row, and with it the whole batch it was settled in.
 * - Each key's check took a row lock on its parent for every metered call: together, about half
 *   the cost of inserting the row on the embedded store.
 *
 * What deleting a parent does to its usage rows is unchanged, now done by the parent's triggers:
 * a deleted app, connection or key is no longer named (set to null), a deleted workspace takes
 * its usage rows with it. Settlement writes null for a parent already gone (`settlement.ts`).
 *
 * @see docs/storage.md
 */
const PARENTS = [
  { table: 'apps', column: 'app_id', constraint: 'usage_events_app_id_fkey' },
  { table: 'connections', column: 'connection_id', constraint: 'usage_events_connection_id_fkey' },
  { table: 'api_keys', column: 'key_id', constraint: 'usage_events_key_id_fkey' },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table usage_events drop constraint if exists usage_events_tenant_id_fkey;`.execute(db);
  await sql`
    create function usage_events_forget_tenants() returns trigger language plpgsql as $$
    begin
      delete from usage_events where tenant_id in (select id from gone);
      return null;
    end $$;
    create trigger usage_events_forget_tenants after delete on tenants
      referencing old table as gone for each statement execute function usage_events_forget_tenants();
  `.execute(db);
  for (const { table, column, constraint } of PARENTS) {
    const name = sql.raw(`usage_events_forget_${table}`);
    await sql`alter table usage_events drop constraint if exists ${sql.raw(constraint)};`.execute(db);
    await sql`
      create function ${name}() returns trigger language plpgsql as $$
      begin
        update usage_events set ${sql.raw(column)} = null where ${sql.raw(column)} in (select id from gone);
        return null;
      end $$;
      create trigger ${name} after delete on ${sql.raw(table)}
        referencing old table as gone for each statement execute function ${name}();
    `.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop trigger usage_events_forget_tenants on tenants;
    drop function usage_events_forget_tenants();
    delete from usage_events u where not exists (select 1 from tenants t where t.id = u.tenant_id);
    alter table usage_events
      add constraint usage_events_tenant_id_fkey foreign key (tenant_id) references tenants (id) on delete cascade;
  `.execute(db);
  for (const { table, column, constraint } of PARENTS) {
    const name = sql.raw(`usage_events_forget_${table}`);
    await sql`
      drop trigger ${name} on ${sql.raw(table)};
      drop function ${name}();
      update usage_events u set ${sql.raw(column)} = null
        where not exists (select 1 from ${sql.raw(table)} p where p.id = u.${sql.raw(column)});
      alter table usage_events add constraint ${sql.raw(constraint)}
        foreign key (${sql.raw(column)}) references ${sql.raw(table)} (id) on delete set null;
    `.execute(db);
  }
}
