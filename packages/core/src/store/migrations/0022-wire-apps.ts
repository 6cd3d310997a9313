import { type Kysely, sql } from 'kysely';

/**
 * Apps of the wire: small per-person screens (`app_...`) the agent builds from host data.
 *
 * - `wire_apps`: one record per app, owned by the host user who made it (`owner`, the subject the
 *   host's `principal()` returned). A remix (`remix`, or `review` when a reviewer must approve it)
 *   is forked from a host component's baseline (`baseline_key`, `baseline_hash`); a person has at
 *   most one remix per component, so two remix gestures racing converge on one app.
 * - `wire_app_versions`: the documents, numbered from 1; only the newest few are kept (and the
 *   approved one of a review app). A review app's versions carry their review decision.
 * - `wire_app_trail`: the person's wishes in order, replayed when a remix is rebased; a rebase
 *   rewrites it whole.
 * - `wire_slots`: named places on host pages, reported by the pages or declared in configuration.
 * - `wire_placements`: one app per person per slot. `evicted_app_id` is the app the last
 *   placement replaced, written by the same upsert from the locked row, so a placement reports
 *   what it evicted exactly, also when placements race.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_apps (
      id text primary key,
      owner text not null,
      name text not null,
      kind text not null check (kind in ('app', 'remix', 'review')),
      baseline_key text,
      baseline_hash text,
      forked_from text,
      version integer not null check (version >= 1),
      approved_hash text,
      approved_version integer,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check (kind = 'app' or (baseline_key is not null and baseline_hash is not null)),
      check (kind = 'review' or (approved_hash is null and approved_version is null)),
      check ((approved_hash is null) = (approved_version is null))
    );
    create index wire_apps_owner_idx on wire_apps (owner, updated_at desc, id desc);
    -- One remix per person per host component: racing remix gestures converge on one app.
    create unique index wire_apps_one_remix_idx on wire_apps (owner, baseline_key) where kind <> 'app';

    create table wire_app_versions (
      app_id text not null references wire_apps (id) on delete cascade,
      version integer not null,
      document jsonb not null,
      content_hash text not null,
      review_status text check (review_status in ('pending', 'approved', 'rejected')),
      review_note text,
      reviewed_by text,
      reviewed_at timestamptz,
      created_at timestamptz not null default now(),
      primary key (app_id, version),
      check (review_status <> 'rejected' or review_note is not null)
    );
    create index wire_app_versions_pending_idx on wire_app_versions (created_at)
      where review_status = 'pending';

    create table wire_app_trail (
      app_id text not null references wire_apps (id) on delete cascade,
      seq integer not null,
      wish text not null,
      created_at timestamptz not null default now(),
      primary key (app_id, seq)
    );

    create table wire_slots (
      id text primary key,
      page text not null,
      label text not null,
      declared boolean not null default false,
      reported_at timestamptz,
      created_at timestamptz not null default now(),
      check (declared or reported_at is not null)
    );

    create table wire_placements (
      owner text not null,
      slot_id text not null,
      app_id text not null references wire_apps (id) on delete cascade,
      evicted_app_id text,
      placed_at timestamptz not null default now(),
      primary key (owner, slot_id)
    );
    create index wire_placements_app_idx on wire_placements (app_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists wire_placements, wire_slots, wire_app_trail, wire_app_versions, wire_apps;
  `.execute(db);
}
