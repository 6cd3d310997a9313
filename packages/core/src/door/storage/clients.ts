/**
 * Registered clients, consent transactions (the consent page's single-use ticket) and consent
 * records. Transaction ids and CSRF tokens are stored only as SHA-256 hashes.
 *
 * @see RFC 7591; docs/door.md "Authorize"
 */
import type { Kysely } from 'kysely';
import { TtlCache } from '../../internal/ttl-cache.js';
import type { Database } from '../../store/database.js';
import { LIFETIMES } from '../config.js';
import { hashSecret, mintSecret, SECRET_PREFIX, safeEqual } from '../secrets.js';
import { splitScopes } from './token-families.js';

export interface RegisteredClient {
  clientId: string;
  clientName: string | null;
  redirectUris: string[];
  metadata: Record<string, unknown>;
  createdAt: Date;
  /** The host that publishes the client's metadata document; null for a registered client. */
  publishedBy: string | null;
}

/** A client found, or why the `client_id` names none the door can use. */
export type ClientLookup =
  | { client: RegisteredClient; problem?: undefined }
  | { client: null; problem: string };

/** The metadata of a client whose id is the URL of its metadata document, or why it cannot be used. */
export type ClientDocument =
  | {
      ok: true;
      metadata: Record<string, unknown> & { redirect_uris: string[]; client_name?: string };
      /** Fetched for this lookup (not served from the cache). */
      fresh: boolean;
    }
  | { ok: false; problem: string };

/** Where the metadata of a client whose id is a URL comes from. */
export interface ClientDocumentSource {
  isDocumentId(clientId: string): boolean;
  resolve(clientId: string): Promise<ClientDocument>;
}

export interface AuthorizationRequest {
  clientId: string;
  subject: string;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  scopes: string[];
  resource: string | null;
}

/** A user's standing consent to one client. */
export interface Consent {
  clientId: string;
  /** The name the client registered (or its metadata document gave); null when it gave none. */
  clientName: string | null;
  scopes: string[];
  /** When the user last approved it. */
  approvedAt: Date;
}

export class ClientStore {
  /** Consent lookups, trusted for `consentCacheMs`; withdrawing here drops the entry at once. */
  readonly #consents: TtlCache<string, string[] | null>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
    consentCacheMs: number,
    private readonly documents: ClientDocumentSource | null,
    /** The door's canonical MCP URL: clients registered and consents given elsewhere are not its. */
    private readonly resource: string,
  ) {
    this.#consents = new TtlCache({ ttlMs: consentCacheMs, maxEntries: 10_000, now });
  }

  async register(input: {
    clientName: string | null;
    redirectUris: string[];
    metadata: (clientId: string, issuedAt: number) => Record<string, unknown>;
  }): Promise<RegisteredClient> {
    const clientId = mintSecret(SECRET_PREFIX.client);
    const createdAt = new Date(this.now());
    const metadata = input.metadata(clientId, Math.floor(createdAt.getTime() / 1000));
    await this.db
      .insertInto('door_clients')
      .values({
        client_id: clientId,
        client_name: input.clientName,
        resource: this.resource,
        redirect_uris: JSON.stringify(input.redirectUris),
        metadata: JSON.stringify(metadata),
        created_at: createdAt,
      })
      .execute();
    return {
      clientId,
      clientName: input.clientName,
      redirectUris: input.redirectUris,
      metadata,
      createdAt,
      publishedBy: null,
    };
  }

  async get(clientId: string): Promise<RegisteredClient | null> {
    return (await this.lookup(clientId)).client;
  }

  /**
   * A registered client, or one whose id is the URL of its metadata document (read through the
   * document source, which caches). A document client is also written to the clients table, so
   * consents and consent transactions can refer to it as to any other.
   */
  async lookup(clientId: string): Promise<ClientLookup> {
    if (this.documents?.isDocumentId(clientId)) {
      const found = await this.documents.resolve(clientId);
      if (!found.ok)
        return { client: null, problem: `The client's metadata document cannot be used: ${found.problem}` };
      const client: RegisteredClient = {
        clientId,
        clientName: found.metadata.client_name ?? null,
        redirectUris: found.metadata.redirect_uris,
        metadata: found.metadata,
        createdAt: new Date(this.now()),
        publishedBy: new URL(clientId).host,
      };
      if (found.fresh) await this.#keepDocumentClient(client);
      return { client };
    }
    // Client ids we mint are short; anything long is not ours and never reaches the index.
    if (clientId.length === 0 || clientId.length > 200) return { client: null, problem: 'Unknown client_id' };
    const row = await this.db
      .selectFrom('door_clients')
      .selectAll()
      .where('client_id', '=', clientId)
      // Unbound (null): registered before clients named their door.
      .where((eb) => eb.or([eb('resource', '=', this.resource), eb('resource', 'is', null)]))
      .executeTakeFirst();
    if (!row) return { client: null, problem: 'Unknown client_id' };
    return {
      client: {
        clientId: row.client_id,
        clientName: row.client_name,
        redirectUris: row.redirect_uris,
        metadata: row.metadata,
        createdAt: new Date(row.created_at),
        publishedBy: null,
      },
    };
  }

  async #keepDocumentClient(client: RegisteredClient): Promise<void> {
    const values = {
      client_name: client.clientName,
      redirect_uris: JSON.stringify(client.redirectUris),
      metadata: JSON.stringify(client.metadata),
    };
    // No door named: a document client is the same client at every door.
    await this.db
      .insertInto('door_clients')
      .values({ client_id: client.clientId, ...values, created_at: client.createdAt })
      .onConflict((oc) => oc.column('client_id').doUpdateSet(values))
      .execute();
  }

  /** Opens a consent transaction; returns its id and CSRF token (shown once, in the page). */
  async openTransaction(request: AuthorizationRequest): Promise<{ transaction: string; csrfToken: string }> {
    const transaction = mintSecret(SECRET_PREFIX.transaction);
    const csrfToken = mintSecret(SECRET_PREFIX.csrf);
    await this.db
      .insertInto('door_consent_transactions')
      .values({
        id_hash: hashSecret(transaction),
        csrf_hash: hashSecret(csrfToken),
        client_id: request.clientId,
        subject: request.subject,
        redirect_uri: request.redirectUri,
        state: request.state,
        code_challenge: request.codeChallenge,
        scopes: request.scopes.join(' '),
        // This door's, whatever the request named: only this door claims it.
        resource: this.resource,
        expires_at: new Date(this.now() + LIFETIMES.transaction * 1000),
      })
      .execute();
    return { transaction, csrfToken };
  }

  /**
   * Claims a consent transaction once for its user: the CSRF token must match (constant time) and
   * the signed-in `subject` be the one it was opened for, both before the single-use claim, so
   * neither a wrong token nor another user's post burns the user's page. Null when unknown,
   * expired, already used, or opened by another door sharing the store; `'wrong-csrf'` when the
   * token is not the form's; `'another-user'` when it is someone else's.
   */
  async claimTransaction(
    transaction: string,
    csrfToken: string,
    subject: string,
  ): Promise<AuthorizationRequest | 'another-user' | 'wrong-csrf' | null> {
    const idHash = hashSecret(transaction);
    const row = await this.db
      .selectFrom('door_consent_transactions')
      .select(['csrf_hash', 'subject'])
      .where('id_hash', '=', idHash)
      .where('resource', '=', this.resource)
      .executeTakeFirst();
    if (!row) return null;
    if (!safeEqual(row.csrf_hash, hashSecret(csrfToken))) return 'wrong-csrf';
    if (row.subject !== subject) return 'another-user';
    const claimed = await this.db
      .updateTable('door_consent_transactions')
      .set({ claimed_at: new Date(this.now()) })
      .where('id_hash', '=', idHash)
      .where('resource', '=', this.resource)
      .where('subject', '=', subject)
      .where('claimed_at', 'is', null)
      .where('expires_at', '>', new Date(this.now()))
      .returningAll()
      .executeTakeFirst();
    if (!claimed) return null;
    return {
      clientId: claimed.client_id,
      subject: claimed.subject,
      redirectUri: claimed.redirect_uri,
      state: claimed.state,
      codeChallenge: claimed.code_challenge,
      scopes: splitScopes(claimed.scopes),
      resource: claimed.resource,
    };
  }

  async recordConsent(subject: string, clientId: string, scopes: string[]): Promise<void> {
    this.#consents.delete(`${clientId} ${subject}`);
    const at = new Date(this.now());
    await this.db
      .insertInto('door_consents')
      .values({
        resource: this.resource,
        subject,
        client_id: clientId,
        scopes: scopes.join(' '),
        created_at: at,
        updated_at: at,
      })
      .onConflict((oc) =>
        oc
          .columns(['resource', 'subject', 'client_id'])
          .doUpdateSet({ scopes: scopes.join(' '), updated_at: at }),
      )
      .execute();
  }

  async consentOf(subject: string, clientId: string): Promise<string[] | null> {
    const key = `${clientId} ${subject}`;
    const hit = this.#consents.get(key);
    if (hit !== undefined) return hit;
    const scopes = await this.#readConsent(subject, clientId);
    this.#consents.set(key, scopes);
    return scopes;
  }

  async #readConsent(subject: string, clientId: string): Promise<string[] | null> {
    const row = await this.db
      .selectFrom('door_consents')
      .select('scopes')
      .where('resource', '=', this.resource)
      .where('subject', '=', subject)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row ? splitScopes(row.scopes) : null;
  }

  /** The clients a user approved at this door, most recently approved first. */
  async consentsOf(subject: string): Promise<Consent[]> {
    const rows = await this.db
      .selectFrom('door_consents as c')
      .leftJoin('door_clients as k', 'k.client_id', 'c.client_id')
      .select(['c.client_id', 'k.client_name', 'c.scopes', 'c.updated_at'])
      .where('c.resource', '=', this.resource)
      .where('c.subject', '=', subject)
      .orderBy('c.updated_at', 'desc')
      .orderBy('c.client_id')
      .execute();
    return rows.map((row) => ({
      clientId: row.client_id,
      clientName: row.client_name ?? null,
      scopes: splitScopes(row.scopes),
      approvedAt: new Date(row.updated_at),
    }));
  }

  /** Withdraws a user's consent to a client (its tool calls then fail closed); false when none. */
  async withdrawConsent(subject: string, clientId: string): Promise<boolean> {
    this.#consents.delete(`${clientId} ${subject}`);
    const deleted = await this.db
      .deleteFrom('door_consents')
      .where('resource', '=', this.resource)
      .where('subject', '=', subject)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return deleted.numDeletedRows > 0n;
  }

  async sweep(): Promise<void> {
    await this.db
      .deleteFrom('door_consent_transactions')
      .where('expires_at', '<', new Date(this.now() - 60 * 60 * 1000))
      .execute();
  }
}
