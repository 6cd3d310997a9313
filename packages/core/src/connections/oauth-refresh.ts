import type { Kysely } from 'kysely';
import { appendEvents } from '../events/log.js';
import type { Logger } from '../http/logger.js';
import type { Database } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';
import { openCredential, sealCredential, USER_OAUTH_PROFILE } from './credentials.js';
import type { OAuthClients } from './oauth-clients.js';
import { oauthCredential } from './oauth-credential.js';
import { requestTokens, TOKEN_TIMEOUT_MS, TokenEndpointError } from './oauth-token-endpoint.js';
import { boundApps } from './service.js';

/**
 * Renews connector OAuth tokens before they expire (RFC 6749 §6), on a timer and when a deployed
 * tool reads a connection about to expire.
 *
 * A refresh first claims its connection in the store (`refresh_claimed_until`), so whichever
 * instance, timer or reader gets there first renews it and every other waits for the result: a
 * refresh token is presented once, and a rotated one replaces it in the same write. A provider
 * that refuses the refresh token (`invalid_grant`: revoked, expired, consent withdrawn) moves the
 * connection to `needs_reauth` and tells its apps (`connection.status_changed`); a provider that is
 * away, or that refuses the platform's client (`invalid_client`), leaves the connection as it is,
 * to be tried again.
 *
 * @see docs/api/oauth.md "Refresh"
 */
export interface TokenRefresherDeps {
  db: Kysely<Database>;
  sealer: Sealer | null;
  clients: OAuthClients;
  fetch: typeof fetch;
  logger: Logger;
  /** Tokens expiring within this many ms are renewed. Default 5 minutes. */
  windowMs?: number;
  now?: () => number;
}

export type RefreshOutcome = 'refreshed' | 'not_due' | 'busy' | 'needs_reauth' | 'failed';

export const DEFAULT_REFRESH_WINDOW_MS = 5 * 60_000;
/** Longer than a token request may take, so a live claim never lapses under its holder. */
const CLAIM_MS = TOKEN_TIMEOUT_MS * 3;
const SWEEP_BATCH = 50;
/**
 * Refusals that are about the platform's client, not the user's grant (a wrong secret, a client
 * the provider disabled): the operator fixes those, so connections stay as they are.
 */
const CLIENT_ERRORS = new Set(['invalid_client', 'unauthorized_client']);

export class TokenRefresher {
  readonly windowMs: number;
  private readonly now: () => number;

  constructor(private readonly deps: TokenRefresherDeps) {
    this.windowMs = deps.windowMs ?? DEFAULT_REFRESH_WINDOW_MS;
    this.now = deps.now ?? Date.now;
  }

  /** Whether a token expiring at `expiresAt` is due for renewal now. */
  isDue(expiresAt: Date | null): boolean {
    return expiresAt !== null && expiresAt.getTime() < this.now() + this.windowMs;
  }

  /**
   * Renews the connections among `ids` that are due, and waits for renewals another caller holds,
   * so what is read next is the renewed token (or the connection's new status).
   */
  async refreshDue(ids: string[]): Promise<void> {
    await Promise.all(
      ids.map(async (id) => {
        if ((await this.refresh(id)) === 'busy') await this.waitForClaim(id);
      }),
    );
  }

  /** Renews one connection if it is due (or `force`), unless another caller is renewing it. */
  async refresh(connectionId: string, options: { force?: boolean } = {}): Promise<RefreshOutcome> {
    const { db } = this.deps;
    const now = new Date(this.now());
    const until = new Date(now.getTime() + CLAIM_MS);
    let claim = db
      .updateTable('connections')
      .set({ refresh_claimed_until: until })
      .where('id', '=', connectionId)
      .where('status', '=', 'connected')
      .where('profile', '=', USER_OAUTH_PROFILE)
      .where('credential_ciphertext', 'is not', null)
      .where((eb) => eb.or([eb('refresh_claimed_until', 'is', null), eb('refresh_claimed_until', '<', now)]));
    if (!options.force) {
      claim = claim.where('token_expires_at', '<', new Date(now.getTime() + this.windowMs));
    }
    const claimed = await claim
      .returning(['id', 'tenant_id', 'provider', 'credential_ciphertext', 'token_expires_at'])
      .executeTakeFirst();
    if (!claimed) return (await this.isClaimed(connectionId)) ? 'busy' : 'not_due';

    const release = () =>
      db
        .updateTable('connections')
        .set({ refresh_claimed_until: null })
        .where('id', '=', connectionId)
        .where('refresh_claimed_until', '=', until)
        .execute();
    try {
      const credential = openCredential(this.deps.sealer, connectionId, claimed.credential_ciphertext!);
      if (credential.type !== 'oauth') {
        await release();
        return 'not_due';
      }
      const expired =
        claimed.token_expires_at !== null && claimed.token_expires_at.getTime() <= now.getTime();
      if (!credential.refresh_token) {
        if (!expired) {
          await release();
          return 'not_due';
        }
        await this.needsReauth(
          connectionId,
          until,
          'The access token expired and the provider gave no refresh token; connect again.',
        );
        return 'needs_reauth';
      }
      const client = await this.deps.clients.find(claimed.provider);
      if (!client) {
        await release();
        this.deps.logger.warn('oauth refresh skipped: no client configured', { provider: claimed.provider });
        return 'failed';
      }
      const tokens = await requestTokens(
        client,
        { grant_type: 'refresh_token', refresh_token: credential.refresh_token },
        this.deps.fetch,
      );
      const renewed = oauthCredential(tokens, now, credential.refresh_token);
      const written = await db
        .updateTable('connections')
        .set({
          credential_ciphertext: sealCredential(this.deps.sealer, connectionId, renewed),
          token_expires_at: renewed.expires_at,
          refresh_claimed_until: null,
          updated_at: new Date(),
        })
        .where('id', '=', connectionId)
        .where('refresh_claimed_until', '=', until)
        .executeTakeFirst();
      if (written.numUpdatedRows === 0n) {
        // Revoked or reconnected meanwhile: what they wrote stands.
        this.deps.logger.warn('oauth refresh result discarded: the connection changed meanwhile', {
          connection_id: connectionId,
        });
      }
      return 'refreshed';
    } catch (error) {
      if (
        error instanceof TokenEndpointError &&
        error.kind === 'rejected' &&
        !CLIENT_ERRORS.has(error.oauthError ?? '')
      ) {
        await this.needsReauth(
          connectionId,
          until,
          `The provider refused to renew access (${error.oauthError}); connect again.`,
        );
        return 'needs_reauth';
      }
      await release().catch(() => {});
      this.deps.logger.warn('oauth refresh failed', {
        connection_id: connectionId,
        error_message: error instanceof Error ? error.message : String(error),
      });
      return 'failed';
    }
  }

  /**
   * Renews every connection that is due, a batch at a time in order of expiry (so connections
   * that cannot be renewed yet never hold the others back); the number renewed.
   */
  async sweep(): Promise<number> {
    const now = new Date(this.now());
    let renewed = 0;
    let after: { expiresAt: Date; id: string } | null = null;
    for (;;) {
      let query = this.deps.db
        .selectFrom('connections')
        .select(['id', 'token_expires_at'])
        .where('status', '=', 'connected')
        .where('profile', '=', USER_OAUTH_PROFILE)
        .where('token_expires_at', '<', new Date(now.getTime() + this.windowMs))
        .where((eb) =>
          eb.or([eb('refresh_claimed_until', 'is', null), eb('refresh_claimed_until', '<', now)]),
        );
      if (after) {
        const { expiresAt, id } = after;
        query = query.where((eb) =>
          eb.or([
            eb('token_expires_at', '>', expiresAt),
            eb.and([eb('token_expires_at', '=', expiresAt), eb('id', '>', id)]),
          ]),
        );
      }
      const due = await query.orderBy('token_expires_at').orderBy('id').limit(SWEEP_BATCH).execute();
      for (const { id } of due) if ((await this.refresh(id)) === 'refreshed') renewed++;
      if (due.length < SWEEP_BATCH) return renewed;
      const last = due[due.length - 1]!;
      after = { expiresAt: last.token_expires_at!, id: last.id };
    }
  }

  /** Sweeps every `intervalMs` until the returned stop is called (one sweep at a time). */
  start(intervalMs: number): () => Promise<void> {
    let running: Promise<unknown> | null = null;
    const timer = setInterval(() => {
      if (running) return;
      running = this.sweep()
        .catch((error) =>
          this.deps.logger.warn('oauth refresh sweep failed', {
            error_message: error instanceof Error ? error.message : String(error),
          }),
        )
        .finally(() => {
          running = null;
        });
    }, intervalMs);
    timer.unref();
    return async () => {
      clearInterval(timer);
      await running;
    };
  }

  private async isClaimed(connectionId: string): Promise<boolean> {
    const row = await this.deps.db
      .selectFrom('connections')
      .select('refresh_claimed_until')
      .where('id', '=', connectionId)
      .executeTakeFirst();
    return !!row?.refresh_claimed_until && row.refresh_claimed_until.getTime() > this.now();
  }

  /** Waits (bounded) until another caller's renewal of the connection is over. */
  private async waitForClaim(connectionId: string): Promise<void> {
    const deadline = Date.now() + TOKEN_TIMEOUT_MS + 1000;
    while (Date.now() < deadline && (await this.isClaimed(connectionId))) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private async needsReauth(connectionId: string, claimedUntil: Date, message: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('connections')
        .set({
          status: 'needs_reauth',
          error_message: message,
          refresh_claimed_until: null,
          updated_at: new Date(),
        })
        .where('id', '=', connectionId)
        .where('refresh_claimed_until', '=', claimedUntil)
        .returning(['id', 'provider'])
        .executeTakeFirst();
      if (!row) return;
      const apps = await boundApps(trx, connectionId);
      await appendEvents(
        trx,
        apps.map((appId) => ({
          appId,
          kind: 'connection.status_changed' as const,
          fields: { slug: row.provider, connection_id: row.id, status: 'needs_reauth' as const },
        })),
      );
    });
  }
}
