import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { appendEvents, type EventDraft } from '../events/log.js';
import type { KeyStore } from '../identity/key-store.js';
import { isUuid } from '../internal/uuid.js';
import type { Database } from '../store/database.js';
import { lockUntilCommit } from '../store/locks.js';
import type { Sealer } from '../store/sealing.js';
import { openCredential, sealCredential, USER_OAUTH_PROFILE } from './credentials.js';
import { type OAuthClients, requireConnector } from './oauth-clients.js';
import { oauthCredential } from './oauth-credential.js';
import { ConnectorOAuthError } from './oauth-errors.js';
import { requestTokens, revokeToken, TokenEndpointError } from './oauth-token-endpoint.js';
import { bindWithin, boundApps, type ConnectionRow, getConnection, revokeConnection } from './service.js';

/**
 * Connecting a tenant to a connector by OAuth 2 (RFC 6749 authorization code with RFC 7636 PKCE):
 * `start` makes a single-use state and the provider's authorize URL, `complete` claims the state
 * the provider hands back, exchanges the code and stores the tokens sealed in a connection (a new
 * one, or the one being reconnected), `disconnect` revokes the tokens at the provider (RFC 7009)
 * and the connection here.
 *
 * The state is 32 random bytes, stored only as its SHA-256, bound to the user and workspace that
 * started it, expiring after `STATE_TTL_MS`, and deleted when presented (before any other check),
 * so it works once. The PKCE verifier is sealed in the state's row.
 *
 * @see docs/api/oauth.md
 */
export interface ConnectorOAuthDeps {
  db: Kysely<Database>;
  sealer: Sealer | null;
  keys: KeyStore;
  clients: OAuthClients;
  /** The platform's public URL: callbacks are `{baseUrl}/api/oauth/{provider}/callback`. */
  baseUrl: string;
  fetch: typeof fetch;
  now?: () => number;
}

export const STATE_TTL_MS = 10 * 60_000;
/** Authorizations one user may have in flight at once; each is a row until it is used or lapses. */
export const MAX_STATES_PER_USER = 20;

export interface StartInput {
  tenantId: string;
  /** The platform user starting it; null for a host app's own user (`endUser`). */
  userId: string | null;
  /** A host app's user and the flow the host polls: the state alone then proves the callback. */
  endUser?: { subject: string; flowId: string } | null;
  provider: string;
  /** Where the user goes afterwards (already checked to be on the platform's origin). */
  returnTo?: string | null;
  /** Bind the new connection to this app of the workspace. */
  appId?: string | null;
  /** Reconnect this connection of the workspace (same provider) instead of making a new one. */
  connectionId?: string | null;
}

export interface CompleteInput {
  /** The signed-in platform user at the callback, if any (a host app's user has none). */
  session: { tenantId: string; userId: string } | null;
  provider: string;
  state: string | null;
  code: string | null;
  /** The provider's `error` (RFC 6749 §4.1.2.1), when it refused. */
  error: string | null;
}

export interface Completed {
  connectionId: string;
  provider: string;
  returnTo: string | null;
  reconnected: boolean;
  /** The host-polled flow this completed, for a host app's user. */
  flowId: string | null;
}

const stateHashOf = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');
const verifierAad = (stateHash: string) => `oauth-state:${stateHash}`;

export class ConnectorOAuth {
  private readonly now: () => number;

  constructor(private readonly deps: ConnectorOAuthDeps) {
    this.now = deps.now ?? Date.now;
  }

  callbackUrl(provider: string): string {
    return `${this.deps.baseUrl}/api/oauth/${encodeURIComponent(provider)}/callback`;
  }

  /** A new authorization: the provider's authorize URL to send the user to, and when it lapses. */
  async start(input: StartInput): Promise<{ authorizeUrl: string; expiresAt: Date }> {
    const { db, sealer } = this.deps;
    const client = await this.deps.clients.forFlow(input.provider);
    if (!sealer) {
      throw new ConnectorOAuthError(
        400,
        'INVALID_REQUEST',
        'Connecting by OAuth needs SERVICE_STORE_ENCRYPTION_KEY on the platform: tokens are stored sealed',
      );
    }
    if (input.appId) await this.requireApp(input.tenantId, input.appId);
    if (input.connectionId) {
      const connection = await this.tenantConnection(
        input.tenantId,
        input.provider,
        input.connectionId,
        input.endUser?.subject ?? null,
      );
      if (connection.status === 'revoked') {
        throw new ConnectorOAuthError(400, 'INVALID_REQUEST', 'A revoked connection cannot be reconnected');
      }
    }
    // Lapsed states are cleared by whoever starts the next authorization.
    await db.deleteFrom('oauth_states').where('expires_at', '<', new Date(this.now())).execute();
    const state = randomBytes(32).toString('base64url');
    const stateHash = stateHashOf(state);
    const verifier = client.pkce ? randomBytes(32).toString('base64url') : null;
    const expiresAt = new Date(this.now() + STATE_TTL_MS);
    await db.transaction().execute(async (trx) => {
      // Counted and written under one lock per user: starts racing each other cannot all pass the count.
      await lockUntilCommit(
        trx,
        input.userId
          ? `oauth-states:user:${input.userId}`
          : `oauth-states:end-user:${input.tenantId}:${input.endUser?.subject ?? ''}`,
      );
      const inFlight = await trx
        .selectFrom('oauth_states')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where((eb) =>
          input.userId
            ? eb('user_id', '=', input.userId)
            : eb.and([
                eb('tenant_id', '=', input.tenantId),
                eb('end_user', '=', input.endUser?.subject ?? ''),
              ]),
        )
        .executeTakeFirstOrThrow();
      if (Number(inFlight.n) >= MAX_STATES_PER_USER) {
        throw new ConnectorOAuthError(
          429,
          'TOO_MANY_AUTHORIZATIONS',
          'Too many authorizations in flight; finish one or wait ten minutes',
        );
      }
      await trx
        .insertInto('oauth_states')
        .values({
          state_hash: stateHash,
          tenant_id: input.tenantId,
          user_id: input.userId,
          provider: input.provider,
          code_verifier_ciphertext: verifier ? sealer.seal(verifier, verifierAad(stateHash)) : null,
          return_to: input.returnTo ?? null,
          app_id: input.appId ?? null,
          connection_id: input.connectionId ?? null,
          end_user: input.endUser?.subject ?? null,
          flow_id: input.endUser?.flowId ?? null,
          expires_at: expiresAt,
        })
        .execute();
    });

    const url = new URL(client.authorizeUrl);
    for (const [name, value] of Object.entries(client.authorizeParams)) url.searchParams.set(name, value);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', client.clientId);
    url.searchParams.set('redirect_uri', this.callbackUrl(input.provider));
    url.searchParams.set('state', state);
    if (client.scopes.length > 0) url.searchParams.set('scope', client.scopes.join(' '));
    if (verifier) {
      url.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
      url.searchParams.set('code_challenge_method', 'S256');
    }
    return { authorizeUrl: url.toString(), expiresAt };
  }

  /**
   * Ends an authorization the provider sent back. Refusals are `ConnectorOAuthError`s carrying
   * the state's `returnTo` once the state is known.
   */
  async complete(input: CompleteInput): Promise<Completed> {
    if (!input.state) throw new ConnectorOAuthError(400, 'INVALID_STATE', 'The state parameter is missing');
    const claimed = await this.deps.db
      .deleteFrom('oauth_states')
      .where('state_hash', '=', stateHashOf(input.state))
      .returningAll()
      .executeTakeFirst();
    if (!claimed || claimed.expires_at.getTime() <= this.now()) {
      throw new ConnectorOAuthError(
        400,
        'INVALID_STATE',
        'This authorization is unknown, expired or already used; start again',
      );
    }
    const refuse = (error: ConnectorOAuthError) => {
      error.returnTo = claimed.return_to;
      error.flowId = claimed.flow_id;
      return error;
    };
    if (claimed.provider !== input.provider) {
      throw refuse(
        new ConnectorOAuthError(400, 'STATE_MISMATCH', 'This authorization was started for another provider'),
      );
    }
    // A platform user's flow ends in the session that started it; a host app's user has no
    // platform session, so for theirs the single-use, unguessable state is the proof.
    const session = input.session;
    if (claimed.end_user === null && session === null) {
      throw refuse(new ConnectorOAuthError(401, 'UNAUTHORIZED', 'Unauthorized'));
    }
    if (
      claimed.end_user === null &&
      (session?.userId !== claimed.user_id || session?.tenantId !== claimed.tenant_id)
    ) {
      throw refuse(
        new ConnectorOAuthError(
          403,
          'FORBIDDEN',
          'This authorization was started by another user or workspace',
        ),
      );
    }
    if (input.error) {
      throw refuse(
        new ConnectorOAuthError(
          400,
          'PROVIDER_ERROR',
          input.error === 'access_denied'
            ? 'Access was not granted'
            : `The provider did not authorize the connection (${input.error})`,
        ),
      );
    }
    if (!input.code)
      throw refuse(new ConnectorOAuthError(400, 'INVALID_REQUEST', 'The code parameter is missing'));
    const client = await this.deps.clients.find(input.provider);
    if (!client) {
      throw refuse(
        new ConnectorOAuthError(
          400,
          'OAUTH_NOT_CONFIGURED',
          `The ${input.provider} integration has no OAuth client configured`,
        ),
      );
    }
    const verifier = claimed.code_verifier_ciphertext
      ? this.deps.sealer!.open(claimed.code_verifier_ciphertext, verifierAad(claimed.state_hash))
      : null;
    const receivedAt = new Date(this.now());
    let tokens: Awaited<ReturnType<typeof requestTokens>>;
    try {
      tokens = await requestTokens(
        client,
        {
          grant_type: 'authorization_code',
          code: input.code,
          redirect_uri: this.callbackUrl(input.provider),
          ...(verifier ? { code_verifier: verifier } : {}),
        },
        this.deps.fetch,
      );
    } catch (error) {
      if (!(error instanceof TokenEndpointError)) throw error;
      throw refuse(
        new ConnectorOAuthError(
          502,
          'OAUTH_EXCHANGE_FAILED',
          `The provider's token exchange failed: ${error.message}`,
          {
            cause: error,
          },
        ),
      );
    }
    const credential = oauthCredential(tokens, receivedAt, null);
    const stored = await this.store(claimed, credential);
    return { ...stored, provider: input.provider, returnTo: claimed.return_to, flowId: claimed.flow_id };
  }

  /**
   * Disconnects: revokes the refresh token (else the access token) at the provider when it has a
   * revocation endpoint, then revokes the connection here (its tokens wiped). A provider that is
   * away does not stop the local revocation; `revokedAtProvider` says whether it acknowledged.
   */
  async disconnect(
    tenantId: string,
    provider: string,
    connectionId: string,
    endUser: string | null = null,
  ): Promise<{ connection: ConnectionRow; revokedAtProvider: boolean }> {
    await requireConnector(this.deps.db, provider);
    const connection = await this.tenantConnection(tenantId, provider, connectionId, endUser);
    if (connection.status === 'revoked') return { connection, revokedAtProvider: false };
    let revokedAtProvider = false;
    const client = await this.deps.clients.find(provider);
    if (client?.revocationUrl && connection.credential_ciphertext) {
      try {
        const credential = openCredential(this.deps.sealer, connection.id, connection.credential_ciphertext);
        if (credential.type === 'oauth') {
          revokedAtProvider = credential.refresh_token
            ? await revokeToken(client, credential.refresh_token, 'refresh_token', this.deps.fetch)
            : await revokeToken(client, credential.access_token, 'access_token', this.deps.fetch);
        }
      } catch {
        // Unreadable tokens or an unreachable provider: the tokens are forgotten here regardless.
        revokedAtProvider = false;
      }
    }
    const revoked = await revokeConnection(this.deps, tenantId, connectionId, endUser);
    return { connection: revoked, revokedAtProvider };
  }

  /** Writes the tokens: into the connection being reconnected, else into a new connection. */
  private async store(
    state: {
      tenant_id: string;
      provider: string;
      app_id: string | null;
      connection_id: string | null;
      end_user: string | null;
      flow_id: string | null;
    },
    credential: ReturnType<typeof oauthCredential>,
  ): Promise<{ connectionId: string; reconnected: boolean }> {
    const { db, sealer } = this.deps;
    const { name } = await requireConnector(db, state.provider);
    return db.transaction().execute(async (trx) => {
      if (state.flow_id) {
        // A host's sign-in cancelled meanwhile connects nothing (the lock orders the two).
        const pending = await trx
          .selectFrom('end_user_flows')
          .select('id')
          .where('id', '=', state.flow_id)
          .where('status', '=', 'pending')
          .forUpdate()
          .executeTakeFirst();
        if (!pending) throw new ConnectorOAuthError(400, 'INVALID_REQUEST', 'The sign-in was cancelled');
      }
      const existing = state.connection_id
        ? await trx
            .selectFrom('connections')
            .select(['id', 'status'])
            .where('id', '=', state.connection_id)
            .where('tenant_id', '=', state.tenant_id)
            .where('provider', '=', state.provider)
            .where('status', '<>', 'revoked')
            .forUpdate()
            .executeTakeFirst()
        : undefined;
      if (existing) {
        await trx
          .updateTable('connections')
          .set({
            status: 'connected',
            credential_ciphertext: sealCredential(sealer, existing.id, credential),
            token_expires_at: credential.expires_at,
            refresh_claimed_until: null,
            error_message: null,
            connected_at: new Date(),
            updated_at: new Date(),
          })
          .where('id', '=', existing.id)
          .execute();
        const base = { slug: state.provider, connection_id: existing.id };
        const drafts: EventDraft[] = [];
        for (const appId of await boundApps(trx, existing.id)) {
          if (existing.status !== 'connected') {
            drafts.push({
              appId,
              kind: 'connection.status_changed',
              fields: { ...base, status: 'connected' },
            });
          }
          drafts.push({ appId, kind: 'connection.changed', fields: base });
        }
        await appendEvents(trx, drafts);
        return { connectionId: existing.id, reconnected: true };
      }
      const id = randomUUID();
      const row = await trx
        .insertInto('connections')
        .values({
          id,
          tenant_id: state.tenant_id,
          provider: state.provider,
          profile: USER_OAUTH_PROFILE,
          status: 'connected',
          display_name: name,
          metadata: JSON.stringify(credential.scope ? { scope: credential.scope } : {}),
          credential_ciphertext: sealCredential(sealer, id, credential),
          token_expires_at: credential.expires_at,
          connected_at: new Date(),
          end_user: state.end_user,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      // A host app's user's connection is theirs: bound to no app of the workspace.
      if (state.app_id && state.end_user === null) await bindWithin(trx, state.tenant_id, state.app_id, row);
      if (state.flow_id) {
        await trx
          .updateTable('end_user_flows')
          .set({ status: 'connected', connection_id: id, updated_at: new Date() })
          .where('id', '=', state.flow_id)
          .execute();
      }
      return { connectionId: id, reconnected: false };
    });
  }

  private async requireApp(tenantId: string, appId: string): Promise<void> {
    const app = isUuid(appId)
      ? await this.deps.db
          .selectFrom('apps')
          .select('id')
          .where('id', '=', appId)
          .where('tenant_id', '=', tenantId)
          .executeTakeFirst()
      : undefined;
    if (!app) throw new ConnectorOAuthError(404, 'NOT_FOUND', 'App not found');
  }

  /**
   * A connection of the workspace (or of its host app's user `endUser`) to this provider; 404 for
   * anyone else's or another provider's.
   */
  private async tenantConnection(
    tenantId: string,
    provider: string,
    id: string,
    endUser: string | null,
  ): Promise<ConnectionRow> {
    const notFound = () => new ConnectorOAuthError(404, 'NOT_FOUND', 'Connection not found');
    const connection = await getConnection(this.deps.db, tenantId, id, endUser).catch(() => {
      throw notFound();
    });
    if (connection.provider !== provider) throw notFound();
    return connection;
  }
}
