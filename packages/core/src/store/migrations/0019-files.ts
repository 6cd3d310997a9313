import { type Kysely, sql } from 'kysely';

/**
 * Files of the embedded wire: one row per uploaded file (owned by a host user, as every wire
 * row), and the bytes of blobs kept in the store, in chunks of a bounded size so a file is
 * written and read a chunk at a time, never held whole.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_files (
      owner text not null,
      id text not null,
      name text not null,
      media_type text not null,
      size bigint not null,
      blob_key text not null unique,
      created_at timestamptz not null default now(),
      primary key (owner, id)
    );
    create index wire_files_recent_idx on wire_files (owner, created_at desc, id desc);

    create table wire_blob_chunks (
      blob_key text not null,
      seq integer not null,
      data bytea not null,
      primary key (blob_key, seq)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists wire_blob_chunks, wire_files;`.execute(db);
}
