/**
 * Codes, grant families and tokens of one door. Every code and family is bound to the door's
 * canonical MCP URL (the `resource` of its tokens) and read only through it, so doors sharing a
 * database never honour each other's (RFC 8707). Claims are row locks or conditional updates, so
 * instances racing on one code or refresh token agree on one outcome.
 *
 * @see RFC 6749 §4.1.2 (code reuse), §6, §10.4; RFC 9700 §4.14.2 (refresh rotation); docs/door.md
 */
import { hkdfSync, randomUUID } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../store/database.js';
import type { NotificationHandler } from '../../store/listener.js';
import { sendNotices } from '../../store/notices.js';
import { createSealer } from '../../store/sealing.js';
import { LIFETIMES, REFRESH_GRACE_MS, REFRESH_MAX_AGE_MS } from '../config.js';
import { hashSecret, mintSecret, SECRET_PREFIX } from '../secrets.js';

/** Every revocation is announced here, with the door's resource as payload. */
export const REVOCATIONS_CHANNEL = 'service_door_revocations';

export interface CodeGrant {
  familyId: string;
  clientId: string;
  subject: string;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  resource: string | null;
  expiresAt: Date;
}

export interface FamilyInput {
  clientId: string;
  subject: string;
  scopes: string[];
  /** `svc:<hash8>` for the service-key exchange. */
  actor?: string | null;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
  /** The access token's scopes. */
  scopes: string[];
  familyId: string;
}

/** What a valid access token stands for. */
export interface AccessGrant {
  familyId: string;
  clientId: string;
  subject: string;
  /** The access token's own scopes (fewer than the family's when a refresh asked for less). */
  scopes: string[];
  actor: string | null;
  expiresAt: Date;
}

export interface RefreshRequest {
  clientId: string;
  /** The scopes asked for; null: the grant's (RFC 6749 §6). */
  scopes: string[] | null;
  /** The scopes the client registered; null when it registered none. */
  registeredScopes: string[] | null;
}

export type RefreshOutcome =
  | {
      ok: true;
      tokens: IssuedTokens;
      subject: string;
      clientId: string;
      /** True when the token was rotated before and the grace window answered the same pair. */
      replayed: boolean;
    }
  | { ok: false; reason: 'unknown' | 'wrong-client' | 'expired' | 'reused' | 'revoked' | 'scope' };

export type RevokeOutcome = 'unknown' | 'wrong-client' | 'revoked';

export interface GrantPolicy {
  /** The door's canonical MCP URL: every code and family is bound to it. */
  resource: string;
  /** Default `REFRESH_GRACE_MS`; 0 makes every second presentation a reuse. */
  refreshGraceMs?: number;
  /** Default `REFRESH_MAX_AGE_MS`. */
  refreshMaxAgeMs?: number;
  /** Called once a revocation is committed, so this instance's caches forget at once. */
  onRevoked?: () => void;
}

/**
 * The door's OAuth grants: authorization codes and the token families they start (one access and
 * refresh chain per authorization). Not the wire's remembered tool approvals.
 */
export class TokenFamilyStore {
  readonly #resource: string;
  readonly #graceMs: number;
  readonly #maxAgeMs: number;
  readonly #onRevoked: () => void;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
    policy: GrantPolicy,
  ) {
    this.#resource = policy.resource;
    this.#graceMs = policy.refreshGraceMs ?? REFRESH_GRACE_MS;
    this.#maxAgeMs = policy.refreshMaxAgeMs ?? REFRESH_MAX_AGE_MS;
    this.#onRevoked = policy.onRevoked ?? (() => {});
  }

  /** Issues a code bound to this door, whatever `resource` the authorization request named. */
  async issueCode(grant: Omit<CodeGrant, 'familyId' | 'expiresAt' | 'resource'>): Promise<string> {
    const code = mintSecret(SECRET_PREFIX.code);
    await this.db
      .insertInto('door_codes')
      .values({
        code_hash: hashSecret(code),
        family_id: randomUUID(),
        client_id: grant.clientId,
        subject: grant.subject,
        redirect_uri: grant.redirectUri,
        code_challenge: grant.codeChallenge,
        scopes: grant.scopes.join(' '),
        resource: this.#resource,
        expires_at: new Date(this.now() + LIFETIMES.code * 1000),
      })
      .execute();
    return code;
  }

  /**
   * Redeems a code (RFC 6749 §4.1.3): claims it at presentation, before anything else about the
   * request is checked, so a second presentation finds it claimed; then `check` judges the
   * request (client, redirect URI, PKCE) and throws to refuse it, the code staying spent; then
   * the family starts with its first tokens. Null for an unknown, expired or replayed code, and
   * for another door's code, which stays unspent there.
   * `check` runs inside the transaction and must not touch the store.
   *
   * Claim, check and issue are one transaction: the claim's row lock makes a replay arriving
   * meanwhile wait for the outcome, and the replay then revokes whatever the first exchange issued
   * (RFC 6749 §4.1.2), so no interleaving leaves those tokens alive.
   */
  async redeemCode(
    code: string,
    check: (grant: CodeGrant) => void | Promise<void>,
    options: { accessTtl: number; refresh: boolean },
  ): Promise<IssuedTokens | null> {
    const codeHash = hashSecret(code);
    let refusal: { error: unknown } | null = null;
    const outcome = await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('door_codes')
        .set({ claimed_at: new Date(this.now()) })
        .where('code_hash', '=', codeHash)
        .where('resource', '=', this.#resource)
        .where('claimed_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!row) return 'unclaimable' as const;
      if (new Date(row.expires_at).getTime() <= this.now()) return null;
      const grant: CodeGrant = {
        familyId: row.family_id,
        clientId: row.client_id,
        subject: row.subject,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        scopes: splitScopes(row.scopes),
        resource: row.resource,
        expiresAt: new Date(row.expires_at),
      };
      try {
        await check(grant);
      } catch (error) {
        // Committed with the claim: a refused presentation spends the code all the same.
        refusal = { error };
        return null;
      }
      const family = { clientId: grant.clientId, subject: grant.subject, scopes: grant.scopes };
      return this.#start(trx, family, options, grant.familyId);
    });
    if (refusal) throw (refusal as { error: unknown }).error;
    if (outcome !== 'unclaimable') return outcome;
    const replayed = await this.db
      .selectFrom('door_codes')
      .select('family_id')
      .where('code_hash', '=', codeHash)
      .where('resource', '=', this.#resource)
      .executeTakeFirst();
    if (replayed) await this.revokeFamily(replayed.family_id);
    return null;
  }

  /** Starts a grant family and issues its first tokens (a refresh token unless `refresh` is false). */
  async startFamily(
    input: FamilyInput,
    options: { accessTtl: number; refresh: boolean },
  ): Promise<IssuedTokens> {
    return this.db.transaction().execute((trx) => this.#start(trx, input, options, randomUUID()));
  }

  async #start(
    trx: Transaction<Database>,
    input: FamilyInput,
    options: { accessTtl: number; refresh: boolean },
    familyId: string,
  ): Promise<IssuedTokens> {
    const createdAt = this.now();
    await trx
      .insertInto('door_grant_families')
      .values({
        id: familyId,
        client_id: input.clientId,
        subject: input.subject,
        scopes: input.scopes.join(' '),
        resource: this.#resource,
        actor: input.actor ?? null,
        created_at: new Date(createdAt),
      })
      .execute();
    return this.#issue(trx, { id: familyId, createdAt }, input.scopes, { ...options, narrowed: false });
  }

  /**
   * Rotates a refresh token: the presented one is spent and a successor pair issued. Requests
   * racing on one token take turns on its family's row lock, each seeing what the one before did.
   *
   * A token rotated less than the grace window ago, whose successor has not been used yet,
   * answers the pair it was rotated to (parallel refreshes, a retry after a lost answer). Any
   * other second presentation is reuse and revokes the whole family.
   */
  async rotate(refreshToken: string, request: RefreshRequest): Promise<RefreshOutcome> {
    const tokenHash = hashSecret(refreshToken);
    const now = this.now();
    const outcome = await this.db.transaction().execute(async (trx): Promise<RefreshOutcome> => {
      // The family's row is the lock every rotation and revocation of the family takes first, so
      // they never wait on each other in two orders. The token is read after, by a statement of
      // its own, so it sees what the request that held the lock before did.
      const locked = await trx
        .selectFrom('door_tokens as t')
        .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
        .select('f.id')
        .where('t.token_hash', '=', tokenHash)
        .where('t.kind', '=', 'refresh')
        .where('f.resource', '=', this.#resource)
        .forUpdate('f')
        .executeTakeFirst();
      if (!locked) return { ok: false, reason: 'unknown' };
      const row = await trx
        .selectFrom('door_tokens as t')
        .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
        .select([
          't.family_id',
          't.expires_at',
          't.rotated_at',
          't.revoked_at',
          't.successor_sealed',
          't.parent_hash',
          'f.client_id',
          'f.subject',
          'f.scopes',
          'f.created_at',
          'f.revoked_at as family_revoked_at',
        ])
        .where('t.token_hash', '=', tokenHash)
        .executeTakeFirstOrThrow();
      if (row.client_id !== request.clientId) return { ok: false, reason: 'wrong-client' };
      if (row.family_revoked_at || row.revoked_at) return { ok: false, reason: 'revoked' };
      const answered = { subject: row.subject, clientId: row.client_id };
      if (row.rotated_at) {
        const withinGrace = now < new Date(row.rotated_at).getTime() + this.#graceMs;
        if (row.successor_sealed && withinGrace) {
          const tokens = openSuccessor(refreshToken, tokenHash, row.successor_sealed, now);
          // A pair with a member revoked since (RFC 7009 at /revoke) is not handed out again.
          const revoked = await trx
            .selectFrom('door_tokens')
            .select('token_hash')
            .where(
              'token_hash',
              'in',
              [tokens.accessToken, tokens.refreshToken].filter((t) => t !== undefined).map(hashSecret),
            )
            .where('revoked_at', 'is not', null)
            .executeTakeFirst();
          if (revoked) return { ok: false, reason: 'revoked' };
          // The pair may carry scopes this request did not ask for (the first refresh asked for
          // the whole grant, this one for less): it then gets an access token of its own, narrowed
          // to what it asked, beside the same refresh token. A refresh never answers more than asked.
          const narrowed = request.scopes ? tokens.scopes.filter((s) => request.scopes!.includes(s)) : [];
          if (narrowed.length > 0 && narrowed.length < tokens.scopes.length) {
            const family = { id: row.family_id, createdAt: new Date(row.created_at).getTime() };
            const access = await this.#issue(trx, family, narrowed, {
              accessTtl: LIFETIMES.access,
              refresh: false,
              narrowed: true,
            });
            return {
              ok: true,
              tokens: { ...access, refreshToken: tokens.refreshToken },
              ...answered,
              replayed: true,
            };
          }
          return { ok: true, tokens: { ...tokens, familyId: row.family_id }, ...answered, replayed: true };
        }
        await this.#revokeFamilyIn(trx, row.family_id);
        return { ok: false, reason: 'reused' };
      }
      const createdAt = new Date(row.created_at).getTime();
      if (new Date(row.expires_at).getTime() <= now || createdAt + this.#maxAgeMs <= now) {
        return { ok: false, reason: 'expired' };
      }
      // RFC 6749 §6: never more than was granted, nor than the client registered for.
      const granted = splitScopes(row.scopes);
      const asked = request.scopes;
      const allowed = (scope: string) =>
        granted.includes(scope) && (request.registeredScopes?.includes(scope) ?? true);
      if (asked && !asked.every(allowed)) return { ok: false, reason: 'scope' };
      const scopes = asked ? granted.filter((scope) => asked.includes(scope)) : granted;
      const tokens = await this.#issue(trx, { id: row.family_id, createdAt }, scopes, {
        accessTtl: LIFETIMES.access,
        refresh: true,
        narrowed: scopes.length < granted.length,
        parentHash: tokenHash,
      });
      await trx
        .updateTable('door_tokens')
        .set({
          rotated_at: new Date(now),
          successor_sealed: this.#graceMs > 0 ? sealSuccessor(refreshToken, tokenHash, tokens, now) : null,
        })
        .where('token_hash', '=', tokenHash)
        .execute();
      // This token is its predecessor's successor: its first use ends the predecessor's window.
      if (row.parent_hash) {
        await trx
          .updateTable('door_tokens')
          .set({ successor_sealed: null })
          .where('token_hash', '=', row.parent_hash)
          .execute();
      }
      return { ok: true, tokens, ...answered, replayed: false };
    });
    if (!outcome.ok && outcome.reason === 'reused') this.#onRevoked();
    return outcome;
  }

  /** The grant behind a live access token of this door, or null (unknown, expired, revoked). */
  async authenticate(accessToken: string): Promise<AccessGrant | null> {
    const row = await this.db
      .selectFrom('door_tokens as t')
      .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
      .select(['t.family_id', 't.expires_at', 'f.client_id', 'f.subject', 'f.actor'])
      .select(sql<string>`coalesce(t.scopes, f.scopes)`.as('scopes'))
      .where('t.token_hash', '=', hashSecret(accessToken))
      .where('t.kind', '=', 'access')
      .where('t.revoked_at', 'is', null)
      .where('f.revoked_at', 'is', null)
      .where('f.resource', '=', this.#resource)
      .executeTakeFirst();
    if (!row) return null;
    const expiresAt = new Date(row.expires_at);
    if (expiresAt.getTime() <= this.now()) return null;
    return {
      familyId: row.family_id,
      clientId: row.client_id,
      subject: row.subject,
      scopes: splitScopes(row.scopes),
      actor: row.actor,
      expiresAt,
    };
  }

  /** Which client a token (access or refresh) of this door was issued to; null when unknown. */
  async ownerOf(
    token: string,
  ): Promise<{ kind: 'access' | 'refresh'; familyId: string; clientId: string } | null> {
    const row = await this.db
      .selectFrom('door_tokens as t')
      .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
      .select(['t.kind', 't.family_id', 'f.client_id'])
      .where('t.token_hash', '=', hashSecret(token))
      .where('f.resource', '=', this.#resource)
      .executeTakeFirst();
    return row ? { kind: row.kind, familyId: row.family_id, clientId: row.client_id } : null;
  }

  /**
   * RFC 7009: an access token revokes itself; a refresh token retires its family (every access
   * token and successor in it). Other families of the same client are untouched.
   */
  async revoke(token: string, clientId: string): Promise<RevokeOutcome> {
    const owner = await this.ownerOf(token);
    if (!owner) return 'unknown';
    if (owner.clientId !== clientId) return 'wrong-client';
    if (owner.kind === 'refresh') {
      await this.revokeFamily(owner.familyId);
      return 'revoked';
    }
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('door_tokens')
        .set({ revoked_at: new Date(this.now()) })
        .where('token_hash', '=', hashSecret(token))
        .where('revoked_at', 'is', null)
        .execute();
      await this.#announce(trx);
    });
    this.#onRevoked();
    return 'revoked';
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.db.transaction().execute((trx) => this.#revokeFamilyIn(trx, familyId));
    this.#onRevoked();
  }

  async #revokeFamilyIn(trx: Transaction<Database>, familyId: string): Promise<void> {
    const at = new Date(this.now());
    await trx
      .updateTable('door_grant_families')
      .set({ revoked_at: at })
      .where('id', '=', familyId)
      .where('revoked_at', 'is', null)
      .execute();
    await trx
      .updateTable('door_tokens')
      .set({ revoked_at: at, successor_sealed: null })
      .where('family_id', '=', familyId)
      .where('revoked_at', 'is', null)
      .execute();
    await this.#announce(trx);
  }

  /**
   * The account-level kill switch: every family of a subject at this door, at every client (or,
   * with `clientId`, at that client only: the user disconnected it), and every code of theirs
   * not yet exchanged.
   */
  async revokeSubject(subject: string, clientId?: string): Promise<string[]> {
    const ids = await this.db.transaction().execute(async (trx) => {
      const at = new Date(this.now());
      // Codes approved but not yet exchanged would start families after this: they are spent
      // now, so a later presentation is refused as any spent code is.
      let codes = trx
        .updateTable('door_codes')
        .set({ claimed_at: at })
        .where('subject', '=', subject)
        .where('resource', '=', this.#resource)
        .where('claimed_at', 'is', null);
      if (clientId !== undefined) codes = codes.where('client_id', '=', clientId);
      await codes.execute();
      let families = trx
        .updateTable('door_grant_families')
        .set({ revoked_at: at })
        .where('subject', '=', subject)
        .where('resource', '=', this.#resource)
        .where('revoked_at', 'is', null);
      if (clientId !== undefined) families = families.where('client_id', '=', clientId);
      const revokedRows = await families.returning('id').execute();
      const revoked = revokedRows.map((f) => f.id);
      if (revoked.length === 0) return revoked;
      await trx
        .updateTable('door_tokens')
        .set({ revoked_at: at, successor_sealed: null })
        .where('family_id', 'in', revoked)
        .where('revoked_at', 'is', null)
        .execute();
      await this.#announce(trx);
      return revoked;
    });
    if (ids.length > 0) this.#onRevoked();
    return ids;
  }

  /** Other instances of this door drop their cached access tokens when the transaction commits. */
  #announce(trx: Transaction<Database>): Promise<void> {
    return sendNotices(trx, [[REVOCATIONS_CHANNEL, this.#resource]]);
  }

  /**
   * Deletes codes and tokens that expired more than a day ago, then the families left with no
   * token (dead authorizations and replay tombstones), so the tables do not grow without bound;
   * and forgets the successor pairs whose grace window has closed.
   * A family gets its first tokens in the transaction that creates it: one a day old with none
   * has nothing left to answer for.
   */
  async sweep(): Promise<void> {
    const before = new Date(this.now() - 24 * 60 * 60 * 1000);
    await this.db.deleteFrom('door_codes').where('expires_at', '<', before).execute();
    await this.db.deleteFrom('door_tokens').where('expires_at', '<', before).execute();
    await this.db
      .updateTable('door_tokens')
      .set({ successor_sealed: null })
      .where('successor_sealed', 'is not', null)
      .where('rotated_at', '<', new Date(this.now() - this.#graceMs))
      .execute();
    await this.db
      .deleteFrom('door_grant_families')
      .where('created_at', '<', before)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('door_tokens')
              .select('door_tokens.token_hash')
              .whereRef('door_tokens.family_id', '=', 'door_grant_families.id'),
          ),
        ),
      )
      .execute();
  }

  async #issue(
    trx: Transaction<Database>,
    family: { id: string; createdAt: number },
    scopes: string[],
    options: { accessTtl: number; refresh: boolean; narrowed: boolean; parentHash?: string },
  ): Promise<IssuedTokens> {
    const accessToken = mintSecret(SECRET_PREFIX.access);
    const refreshToken = options.refresh ? mintSecret(SECRET_PREFIX.refresh) : undefined;
    const now = this.now();
    // Idle lifetime renewed by each rotation, never past the authorization's absolute age.
    const refreshExpiresAt = Math.min(now + LIFETIMES.refresh * 1000, family.createdAt + this.#maxAgeMs);
    await trx
      .insertInto('door_tokens')
      .values([
        {
          token_hash: hashSecret(accessToken),
          kind: 'access',
          family_id: family.id,
          expires_at: new Date(now + options.accessTtl * 1000),
          // Only a narrowed token keeps its own list; the others follow the family's grant.
          scopes: options.narrowed ? scopes.join(' ') : null,
        },
        ...(refreshToken
          ? [
              {
                token_hash: hashSecret(refreshToken),
                kind: 'refresh' as const,
                family_id: family.id,
                expires_at: new Date(refreshExpiresAt),
                parent_hash: options.parentHash ?? null,
              },
            ]
          : []),
      ])
      .execute();
    return {
      accessToken,
      expiresIn: options.accessTtl,
      scopes,
      familyId: family.id,
      ...(refreshToken ? { refreshToken } : {}),
    };
  }
}

/**
 * Clears a door's cached access tokens whenever any instance revokes one of its tokens (and when
 * notifications may have been missed). Null when the store cannot notify (a bare database
 * handle): then other instances' revocations apply once the cache entry expires.
 */
export async function followRevocations(
  store: { listen?(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> },
  resource: string,
  onRevoked: () => void,
): Promise<(() => Promise<void>) | null> {
  if (typeof store.listen !== 'function') return null;
  return store.listen(REVOCATIONS_CHANNEL, (payload) => {
    if (payload === null || payload === resource) onRevoked();
  });
}

export function splitScopes(value: string): string[] {
  return value.split(' ').filter((scope) => scope.length > 0);
}

/**
 * The successor pair of a rotated refresh token, sealed under a key derived from that token
 * (HKDF, unrelated to the SHA-256 stored as its hash): only whoever presents the token again can
 * open it, and a copy of the database alone yields neither the access nor the refresh token.
 */
interface SealedSuccessor {
  accessToken: string;
  refreshToken: string;
  scopes: string[];
  accessExpiresAt: number;
}

function successorSealer(refreshToken: string) {
  const key = Buffer.from(hkdfSync('sha256', refreshToken, '', 'door refresh successor', 32));
  return createSealer([key]);
}

function sealSuccessor(refreshToken: string, tokenHash: string, tokens: IssuedTokens, now: number): string {
  const successor: SealedSuccessor = {
    accessToken: tokens.accessToken,
    refreshToken: tokens.refreshToken!,
    scopes: tokens.scopes,
    accessExpiresAt: now + tokens.expiresIn * 1000,
  };
  return successorSealer(refreshToken).seal(JSON.stringify(successor), tokenHash);
}

function openSuccessor(
  refreshToken: string,
  tokenHash: string,
  sealed: string,
  now: number,
): Omit<IssuedTokens, 'familyId'> {
  const successor = JSON.parse(successorSealer(refreshToken).open(sealed, tokenHash)) as SealedSuccessor;
  return {
    accessToken: successor.accessToken,
    refreshToken: successor.refreshToken,
    scopes: successor.scopes,
    // The same token, so what is left of its hour.
    expiresIn: Math.max(0, Math.floor((successor.accessExpiresAt - now) / 1000)),
  };
}
