/**
 * Codes, grant families and tokens. Every claim is one conditional UPDATE ... RETURNING, so two
 * instances racing to redeem one code or rotate one refresh token get exactly one winner.
 *
 * @see RFC 6749 §4.1.2 (code reuse), §10.4; OAuth 2.1 §4.3.1 (refresh rotation); docs/door.md
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/database.js';
import { LIFETIMES } from '../config.js';
import { hashSecret, mintSecret, SECRET_PREFIX } from '../secrets.js';

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
  id?: string;
  clientId: string;
  subject: string;
  scopes: string[];
  resource: string | null;
  /** `svc:<hash8>` for the service-key exchange. */
  actor?: string | null;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
  scopes: string[];
  familyId: string;
}

/** What a valid access token stands for. */
export interface AccessGrant {
  familyId: string;
  clientId: string;
  subject: string;
  scopes: string[];
  actor: string | null;
  expiresAt: Date;
}

export type RefreshOutcome =
  | { ok: true; tokens: IssuedTokens; subject: string; clientId: string }
  | { ok: false; reason: 'unknown' | 'wrong-client' | 'expired' | 'reused' | 'revoked' | 'scope' };

export type RevokeOutcome = 'unknown' | 'wrong-client' | 'revoked';

/**
 * The door's OAuth grants: authorization codes and the token families they start (one access and
 * refresh chain per authorization). Not the wire's remembered tool approvals.
 */
export class TokenFamilyStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
  ) {}

  async issueCode(grant: Omit<CodeGrant, 'familyId' | 'expiresAt'>): Promise<string> {
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
        resource: grant.resource,
        expires_at: new Date(this.now() + LIFETIMES.code * 1000),
      })
      .execute();
    return code;
  }

  /**
   * Redeems a code (RFC 6749 §4.1.3): claims it at presentation, before anything else about the
   * request is checked, so a second presentation finds it claimed; then `check` judges the
   * request (client, redirect URI, PKCE) and throws to refuse it, the code staying spent; then
   * the family starts with its first tokens. Null for an unknown, expired or replayed code.
   * `check` runs inside the transaction and must not touch the store.
   *
   * Claim, check and issue are one transaction: the claim's row lock makes a replay arriving
   * meanwhile wait for the outcome, and the replay then revokes whatever the first exchange issued
   * (RFC 6749 §4.1.2), so no interleaving leaves those tokens alive.
   */
  async redeemCode(
    code: string,
    check: (grant: CodeGrant) => void | Promise<void>,
    options: { accessTtl: number; refresh: boolean; resource: string },
  ): Promise<IssuedTokens | null> {
    const codeHash = hashSecret(code);
    let refusal: { error: unknown } | null = null;
    const outcome = await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('door_codes')
        .set({ claimed_at: new Date(this.now()) })
        .where('code_hash', '=', codeHash)
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
      const family = {
        id: grant.familyId,
        clientId: grant.clientId,
        subject: grant.subject,
        scopes: grant.scopes,
        resource: grant.resource ?? options.resource,
      };
      return this.#start(trx, family, options);
    });
    if (refusal) throw (refusal as { error: unknown }).error;
    if (outcome !== 'unclaimable') return outcome;
    const replayed = await this.db
      .selectFrom('door_codes')
      .select('family_id')
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
    if (replayed) await this.revokeFamily(replayed.family_id);
    return null;
  }

  /** Starts a grant family and issues its first tokens (a refresh token unless `refresh` is false). */
  async startFamily(
    input: FamilyInput,
    options: { accessTtl: number; refresh: boolean },
  ): Promise<IssuedTokens> {
    return this.db.transaction().execute((trx) => this.#start(trx, input, options));
  }

  async #start(
    trx: Kysely<Database>,
    input: FamilyInput,
    options: { accessTtl: number; refresh: boolean },
  ): Promise<IssuedTokens> {
    const familyId = input.id ?? randomUUID();
    await trx
      .insertInto('door_grant_families')
      .values({
        id: familyId,
        client_id: input.clientId,
        subject: input.subject,
        scopes: input.scopes.join(' '),
        resource: input.resource,
        actor: input.actor ?? null,
        created_at: new Date(this.now()),
      })
      .execute();
    return this.#issue(trx, familyId, input.scopes, options);
  }

  /**
   * Rotates a refresh token: the presented one is claimed atomically and a successor issued.
   * Presenting a token that was already rotated revokes the whole family (reuse detection).
   */
  async rotate(refreshToken: string, clientId: string, requested: string[] = []): Promise<RefreshOutcome> {
    const tokenHash = hashSecret(refreshToken);
    const row = await this.db
      .selectFrom('door_tokens as t')
      .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
      .select([
        't.family_id',
        't.expires_at',
        't.rotated_at',
        't.revoked_at',
        'f.client_id',
        'f.subject',
        'f.scopes',
        'f.revoked_at as family_revoked_at',
      ])
      .where('t.token_hash', '=', tokenHash)
      .where('t.kind', '=', 'refresh')
      .executeTakeFirst();
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.client_id !== clientId) return { ok: false, reason: 'wrong-client' };
    if (row.family_revoked_at || row.revoked_at) return { ok: false, reason: 'revoked' };
    if (row.rotated_at) {
      await this.revokeFamily(row.family_id);
      return { ok: false, reason: 'reused' };
    }
    if (new Date(row.expires_at).getTime() <= this.now()) return { ok: false, reason: 'expired' };
    // A refresh keeps the family's scopes; asking for more is refused before anything is spent.
    const granted = splitScopes(row.scopes);
    if (requested.some((scope) => !granted.includes(scope))) return { ok: false, reason: 'scope' };
    const tokens = await this.db.transaction().execute(async (trx) => {
      const claimed = await trx
        .updateTable('door_tokens')
        .set({ rotated_at: new Date(this.now()) })
        .where('token_hash', '=', tokenHash)
        .where('rotated_at', 'is', null)
        .where('revoked_at', 'is', null)
        .returning('token_hash')
        .executeTakeFirst();
      if (!claimed) return null;
      return this.#issue(trx, row.family_id, granted, { accessTtl: LIFETIMES.access, refresh: true });
    });
    if (!tokens) {
      // Another request rotated it between our read and our claim: the same token twice.
      await this.revokeFamily(row.family_id);
      return { ok: false, reason: 'reused' };
    }
    return { ok: true, tokens, subject: row.subject, clientId: row.client_id };
  }

  /** The grant behind a live access token, or null (unknown, expired, revoked, family revoked). */
  async authenticate(accessToken: string): Promise<AccessGrant | null> {
    const row = await this.db
      .selectFrom('door_tokens as t')
      .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
      .select(['t.family_id', 't.expires_at', 'f.client_id', 'f.subject', 'f.scopes', 'f.actor'])
      .where('t.token_hash', '=', hashSecret(accessToken))
      .where('t.kind', '=', 'access')
      .where('t.revoked_at', 'is', null)
      .where('f.revoked_at', 'is', null)
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

  /** Which client a token (access or refresh) was issued to, and its family; null when unknown. */
  async ownerOf(
    token: string,
  ): Promise<{ kind: 'access' | 'refresh'; familyId: string; clientId: string } | null> {
    const row = await this.db
      .selectFrom('door_tokens as t')
      .innerJoin('door_grant_families as f', 'f.id', 't.family_id')
      .select(['t.kind', 't.family_id', 'f.client_id'])
      .where('t.token_hash', '=', hashSecret(token))
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
    } else {
      await this.db
        .updateTable('door_tokens')
        .set({ revoked_at: new Date(this.now()) })
        .where('token_hash', '=', hashSecret(token))
        .where('revoked_at', 'is', null)
        .execute();
    }
    return 'revoked';
  }

  async revokeFamily(familyId: string): Promise<void> {
    const at = new Date(this.now());
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('door_grant_families')
        .set({ revoked_at: at })
        .where('id', '=', familyId)
        .where('revoked_at', 'is', null)
        .execute();
      await trx
        .updateTable('door_tokens')
        .set({ revoked_at: at })
        .where('family_id', '=', familyId)
        .where('revoked_at', 'is', null)
        .execute();
    });
  }

  /** The account-level kill switch: every family of a subject, at every client. */
  async revokeSubject(subject: string): Promise<string[]> {
    const families = await this.db
      .updateTable('door_grant_families')
      .set({ revoked_at: new Date(this.now()) })
      .where('subject', '=', subject)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    const ids = families.map((f) => f.id);
    if (ids.length > 0) {
      await this.db
        .updateTable('door_tokens')
        .set({ revoked_at: new Date(this.now()) })
        .where('family_id', 'in', ids)
        .where('revoked_at', 'is', null)
        .execute();
    }
    return ids;
  }

  /**
   * Deletes codes and tokens that expired more than a day ago, then the families left with no
   * token (dead authorizations and replay tombstones), so the tables do not grow without bound.
   * A family gets its first tokens in the transaction that creates it: one a day old with none
   * has nothing left to answer for.
   */
  async sweep(): Promise<void> {
    const before = new Date(this.now() - 24 * 60 * 60 * 1000);
    await this.db.deleteFrom('door_codes').where('expires_at', '<', before).execute();
    await this.db.deleteFrom('door_tokens').where('expires_at', '<', before).execute();
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
    trx: Kysely<Database>,
    familyId: string,
    scopes: string[],
    options: { accessTtl: number; refresh: boolean },
  ): Promise<IssuedTokens> {
    const accessToken = mintSecret(SECRET_PREFIX.access);
    const refreshToken = options.refresh ? mintSecret(SECRET_PREFIX.refresh) : undefined;
    const now = this.now();
    await trx
      .insertInto('door_tokens')
      .values([
        {
          token_hash: hashSecret(accessToken),
          kind: 'access',
          family_id: familyId,
          expires_at: new Date(now + options.accessTtl * 1000),
        },
        ...(refreshToken
          ? [
              {
                token_hash: hashSecret(refreshToken),
                kind: 'refresh' as const,
                family_id: familyId,
                expires_at: new Date(now + LIFETIMES.refresh * 1000),
              },
            ]
          : []),
      ])
      .execute();
    return {
      accessToken,
      expiresIn: options.accessTtl,
      scopes,
      familyId,
      ...(refreshToken ? { refreshToken } : {}),
    };
  }
}

export function splitScopes(value: string): string[] {
  return value.split(' ').filter((scope) => scope.length > 0);
}
