import { type Kysely, sql } from 'kysely';

/**
 * The MCP door's tokens bound to their door, and refreshes that survive a race.
 *
 * - Clients, consents and sessions name the door (its canonical MCP URL, the `resource` of its
 *   tokens), so doors sharing a database never honour each other's. Rows written before are
 *   given the door of the authorizations that use them; a client nobody authorized stays unbound.
 * - An access token may carry fewer scopes than its grant (a refresh asked for less).
 * - A rotated refresh token keeps, for the grace window, the pair it was rotated to, sealed under
 *   a key derived from the refresh token itself (only its presenter can open it), and its
 *   successor names it, so the successor's first use can end the window.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table door_tokens add column scopes text;
    alter table door_tokens add column successor_sealed text;
    alter table door_tokens add column parent_hash text;

    alter table door_clients add column resource text;
    update door_clients c set resource = (
      select f.resource from door_grant_families f
      where f.client_id = c.client_id and f.resource is not null
      order by f.created_at desc limit 1
    );

    alter table door_consents add column resource text;
    update door_consents c set resource = coalesce(
      (select f.resource from door_grant_families f
        where f.client_id = c.client_id and f.subject = c.subject and f.resource is not null
        order by f.created_at desc limit 1),
      (select k.resource from door_clients k where k.client_id = c.client_id)
    );
    -- Tied to no door, such a consent backs no token: the next authorization records it again.
    delete from door_consents where resource is null;
    alter table door_consents alter column resource set not null;
    alter table door_consents drop constraint door_consents_pkey;
    alter table door_consents add primary key (resource, subject, client_id);

    alter table door_sessions add column resource text;
    update door_sessions s set resource = k.resource from door_clients k where k.client_id = s.client_id;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table door_sessions drop column resource;
    alter table door_consents drop constraint door_consents_pkey;
    delete from door_consents a using door_consents b
      where a.subject = b.subject and a.client_id = b.client_id and a.resource > b.resource;
    alter table door_consents drop column resource;
    alter table door_consents add primary key (subject, client_id);
    alter table door_clients drop column resource;
    alter table door_tokens drop column parent_hash, drop column successor_sealed, drop column scopes;
  `.execute(db);
}
