import { type Kysely, sql } from 'kysely';

/**
 * The embedded application wire: threads and their messages, runs (one per turn) with the chunks
 * they streamed (for resume), approvals, grants, audit events and webhook delivery ids.
 *
 * Rows belong to a host user (`owner`: the subject the host's `principal()` returned); every
 * query filters by it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_threads (
      owner text not null,
      id text not null,
      title text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (owner, id)
    );
    create index wire_threads_recent_idx on wire_threads (owner, updated_at desc);

    create table wire_messages (
      owner text not null,
      thread_id text not null,
      seq integer not null,
      id text not null,
      role text not null check (role in ('user', 'assistant', 'system')),
      message jsonb not null,
      created_at timestamptz not null default now(),
      primary key (owner, thread_id, seq),
      foreign key (owner, thread_id) references wire_threads (owner, id) on delete cascade
    );

    create table wire_runs (
      id text primary key,
      owner text not null,
      thread_id text not null,
      status text not null check (status in ('running', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
      stop_requested_at timestamptz,
      stop_reason text,
      error_code text,
      error_message text,
      watched_at timestamptz not null default now(),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      ended_at timestamptz,
      foreign key (owner, thread_id) references wire_threads (owner, id) on delete cascade
    );
    create index wire_runs_thread_idx on wire_runs (owner, thread_id, created_at desc);
    -- At most one run in flight per thread, across every instance.
    create unique index wire_runs_one_in_flight_idx on wire_runs (owner, thread_id)
      where status in ('running', 'awaiting_approval');

    create table wire_run_chunks (
      run_id text not null references wire_runs (id) on delete cascade,
      seq integer not null,
      chunk jsonb not null,
      primary key (run_id, seq)
    );

    create table wire_approvals (
      id text primary key,
      owner text not null,
      run_id text not null references wire_runs (id) on delete cascade,
      thread_id text not null,
      tool_call_id text not null,
      tool text not null,
      input jsonb not null,
      status text not null check (status in ('pending', 'approved', 'executed', 'declined', 'expired', 'dropped')),
      remember jsonb,
      grant_id text,
      created_at timestamptz not null default now(),
      decided_at timestamptz,
      expires_at timestamptz not null
    );
    create index wire_approvals_owner_idx on wire_approvals (owner, created_at desc);

    create table wire_grants (
      id text primary key,
      owner text not null,
      tool text not null,
      scope text not null check (scope in ('tool', 'input')),
      input_hash text,
      approval_id text,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz
    );
    create index wire_grants_owner_idx on wire_grants (owner, tool);

    create table wire_audit_events (
      id bigint generated always as identity primary key,
      owner text,
      kind text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now()
    );
    create index wire_audit_owner_idx on wire_audit_events (owner, id desc);

    create table wire_webhook_deliveries (
      source text not null,
      delivery_id text not null,
      received_at timestamptz not null default now(),
      primary key (source, delivery_id)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists wire_webhook_deliveries, wire_audit_events, wire_grants, wire_approvals,
      wire_run_chunks, wire_runs, wire_messages, wire_threads cascade;
  `.execute(db);
}
