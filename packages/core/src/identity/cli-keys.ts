import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { sendNotices } from '../store/notices.js';
import { type KeyPrincipal, KeyStore, keyNotices } from './key-store.js';

/** What `service login` receives: a fresh personal key and who it belongs to. */
export interface IssuedCliKey {
  keyId: string;
  /** The key itself (`service_sk_*`): handed to the CLI once, stored only as its hash. */
  apiKey: string;
  prefix: string;
  /** Ids of the account's CLI keys this issue revoked. */
  revokedKeyIds: string[];
}

export interface IssueCliKeyInput {
  userId: string;
  tenantId: string;
  /** Shown in key listings, e.g. `service login`. */
  name?: string;
}

/**
 * Mints the account's CLI key (kind `cli`, scoped to the tenant, linked to the user) and revokes
 * every CLI key the account held before, in one transaction. The user row is locked first, so two
 * logins racing for one account end with exactly one live CLI key.
 *
 * `keys` is the platform's key store: revoked keys are dropped from its cache at once, so an old
 * key stops working on this instance immediately, and on the others when the revocation's notice
 * reaches them.
 */
export async function issueCliKey(
  db: Kysely<Database>,
  keys: KeyStore,
  input: IssueCliKeyInput,
): Promise<IssuedCliKey> {
  const result = await db.transaction().execute(async (trx) => {
    await trx.selectFrom('users').select('id').where('id', '=', input.userId).forUpdate().executeTakeFirst();
    const revoked = await trx
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('kind', '=', 'cli')
      .where('user_id', '=', input.userId)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    // A store bound to the transaction, so the insert commits or rolls back with the revocations.
    const issued = await new KeyStore(trx).issue({
      tenantId: input.tenantId,
      kind: 'cli',
      userId: input.userId,
      name: input.name ?? 'service login',
    });
    await sendNotices(trx, keyNotices(revoked.map((row) => row.id)));
    return { issued, revokedKeyIds: revoked.map((row) => row.id) };
  });
  keys.forget(result.revokedKeyIds);
  return {
    keyId: result.issued.id,
    apiKey: result.issued.key,
    prefix: result.issued.prefix,
    revokedKeyIds: result.revokedKeyIds,
  };
}

/** Who a key belongs to, as `service whoami` shows it. */
export interface KeyOwner {
  tenant: { id: string; name: string };
  /** The user of a CLI key. */
  user: { email: string | null; name: string | null } | null;
  /** The app of an App Key. */
  app: { id: string; slug: string; name: string } | null;
  key: { prefix: string; createdAt: Date };
}

/** The CLI's keys: issued by `service login`, described by `service whoami`. */
export class CliKeys {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly keys: KeyStore,
  ) {}

  /** Mints the account's CLI key, revoking its previous ones (see `issueCliKey`). */
  issue(input: IssueCliKeyInput): Promise<IssuedCliKey> {
    return issueCliKey(this.db, this.keys, input);
  }

  /** The tenant, user or app, and stored key of an authenticated key; null once either is gone. */
  async describe(key: KeyPrincipal): Promise<KeyOwner | null> {
    const [tenant, row, user, app] = await Promise.all([
      this.db.selectFrom('tenants').select(['id', 'name']).where('id', '=', key.tenantId).executeTakeFirst(),
      this.db
        .selectFrom('api_keys')
        .select(['prefix', 'created_at'])
        .where('id', '=', key.keyId)
        .where('tenant_id', '=', key.tenantId)
        .executeTakeFirst(),
      key.userId
        ? this.db
            .selectFrom('users')
            .select(['email', 'name'])
            .where('id', '=', key.userId)
            .executeTakeFirst()
        : undefined,
      key.appId
        ? this.db
            .selectFrom('apps')
            .select(['id', 'slug', 'name'])
            .where('id', '=', key.appId)
            .where('tenant_id', '=', key.tenantId)
            .executeTakeFirst()
        : undefined,
    ]);
    if (!tenant || !row) return null;
    return {
      tenant,
      user: user ?? null,
      app: app ?? null,
      key: { prefix: row.prefix, createdAt: row.created_at },
    };
  }
}
