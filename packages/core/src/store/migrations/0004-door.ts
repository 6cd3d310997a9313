import { type Kysely, sql } from 'kysely';

/**
 * The MCP door's OAuth state: registered clients, consent transactions, consents, authorization
 * codes, grant families with their access and refresh tokens, federation nonces and MCP sessions.
 * Every code, token, transaction id, CSRF token and session id is stored only as its SHA-256 hash.
 *
 * @see docs/door.md, docs/storage.md
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table door_clients (
      client_id text primary key,
      client_name text,
      redirect_uris jsonb not null,
      metadata jsonb not null,
      created_at timestamptz not null default now()
    );

    create table door_consent_transactions (
      id_hash text primary key,
      csrf_hash text not null,
      client_id text not null references door_clients (client_id) on delete cascade,
      subject text not null,
      redirect_uri text not null,
      state text,
      code_challenge text not null,
      scopes text not null,
      resource text,
      expires_at timestamptz not null,
      claimed_at timestamptz,
      created_at timestamptz not null default now()
    );

    create table door_consents (
      subject text not null,
      client_id text not null references door_clients (client_id) on delete cascade,
      scopes text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (subject, client_id)
    );

    create table door_grant_families (
      id uuid primary key,
      client_id text not null,
      subject text not null,
      scopes text not null,
      resource text,
      actor text,
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );
    create index door_grant_families_subject_idx on door_grant_families (subject);
    create index door_grant_families_client_idx on door_grant_families (client_id);

    create table door_codes (
      code_hash text primary key,
      family_id uuid not null,
      client_id text not null,
      subject text not null,
      redirect_uri text not null,
      code_challenge text not null,
      scopes text not null,
      resource text,
      expires_at timestamptz not null,
      claimed_at timestamptz,
      created_at timestamptz not null default now()
    );

    create table door_tokens (
      token_hash text primary key,
      kind text not null check (kind in ('access', 'refresh')),
      family_id uuid not null references door_grant_families (id) on delete cascade,
      expires_at timestamptz not null,
      rotated_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index door_tokens_family_idx on door_tokens (family_id);

    create table door_federation_nonces (
      jti_hash text primary key,
      expires_at timestamptz not null
    );

    create table door_sessions (
      id_hash text primary key,
      subject text not null,
      client_id text not null,
      created_at timestamptz not null default now(),
      ended_at timestamptz
    );
    create index door_sessions_subject_idx on door_sessions (subject);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists door_sessions, door_federation_nonces, door_tokens, door_codes,
      door_grant_families, door_consents, door_consent_transactions, door_clients cascade;
  `.execute(db);
}
