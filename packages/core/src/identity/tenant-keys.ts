import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { ApiKeysTable, Database } from '../store/database.js';
import { sendNotices } from '../store/notices.js';
import { issueCliKey } from './cli-keys.js';
import { KeyStore, keyNotices, liveKeyAt } from './key-store.js';

/** The kinds of key a workspace manages under `/api/keys` (Connection Keys live under their connection). */
export const MANAGED_KEY_KINDS = ['app', 'cli'] as const;
export type ManagedKeyKind = (typeof MANAGED_KEY_KINDS)[number];

/** How long a rotated key keeps working unless the rotation says otherwise: one day. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 24 * 60 * 60;
/** The longest overlap a rotation may ask for: seven days. */
export const MAX_ROTATION_OVERLAP_SECONDS = 7 * 24 * 60 * 60;

/** A key as listings show it: never the key itself. */
export interface KeySummary {
  id: string;
  kind: ManagedKeyKind;
  name: string | null;
  /** The first 16 characters of the key. */
  prefix: string;
  appId: string | null;
  userId: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** Set on a rotated key: it works until then. */
  expiresAt: Date | null;
}

/** A freshly minted key: its summary and the key itself, shown this once. */
export interface MintedKey {
  key: KeySummary;
  apiKey: string;
}

/**
 * Hands a rotated key's replacement to whatever holds the old key on the platform's side (a
 * deployment's sealed App Key), inside the rotation's transaction, so the two never disagree.
 */
export type KeyHandOver = (
  trx: Transaction<Database>,
  oldKeyId: string,
  replacement: { id: string; key: string },
) => Promise<void>;

export type CreateKeyInput =
  | { kind: 'app'; appId: string; name?: string | undefined }
  | { kind: 'cli'; userId: string; name?: string | undefined };

/** A refusal of a key operation, with the HTTP status it maps to. */
export class KeyError extends Error {
  override name = 'KeyError';
  constructor(
    readonly status: 403 | 404 | 409,
    message: string,
    readonly code: 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT' | 'DEPLOYMENT_KEY',
  ) {
    super(message);
  }
}

const noSuchKey = () => new KeyError(404, 'Key not found', 'NOT_FOUND');

type KeyRow = Pick<
  Selectable<ApiKeysTable>,
  'id' | 'kind' | 'name' | 'prefix' | 'app_id' | 'user_id' | 'created_at' | 'last_used_at' | 'expires_at'
>;
const SUMMARY_COLUMNS = [
  'id',
  'kind',
  'name',
  'prefix',
  'app_id',
  'user_id',
  'created_at',
  'last_used_at',
  'expires_at',
] as const;

/**
 * The App Keys and CLI keys of a workspace: listed, created, named, rotated with an overlap, and
 * revoked. Every query is scoped to the tenant, so another tenant's key reads as unknown (404).
 * Keys are stored only as hashes (see `KeyStore`); revocations and rotations reach every
 * instance's key cache through the store's notifications.
 */
export class TenantKeys {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly keys: KeyStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** The tenant's live App Keys and CLI keys (rotated ones until their overlap ends), newest first. */
  async list(tenantId: string): Promise<KeySummary[]> {
    const rows = await this.#live(this.db, tenantId).orderBy('created_at', 'desc').orderBy('id').execute();
    return rows.map(summaryOf);
  }

  /**
   * Mints an App Key for an app of the tenant, or a CLI key for the signed-in user. A CLI key
   * replaces the account's previous ones, as `service login` does (one live CLI key per account).
   */
  async create(tenantId: string, input: CreateKeyInput): Promise<MintedKey & { revokedKeyIds: string[] }> {
    if (input.kind === 'cli') {
      const issued = await issueCliKey(this.db, this.keys, {
        tenantId,
        userId: input.userId,
        ...(input.name ? { name: input.name } : {}),
      });
      return {
        key: await this.#minted(tenantId, issued.keyId),
        apiKey: issued.apiKey,
        revokedKeyIds: issued.revokedKeyIds,
      };
    }
    const app = isUuid(input.appId)
      ? await this.db
          .selectFrom('apps')
          .select('id')
          .where('id', '=', input.appId)
          .where('tenant_id', '=', tenantId)
          .executeTakeFirst()
      : undefined;
    if (!app) throw new KeyError(404, 'App not found', 'NOT_FOUND');
    const issued = await this.keys.issue({ tenantId, kind: 'app', appId: app.id, name: input.name ?? null });
    return { key: await this.#minted(tenantId, issued.id), apiKey: issued.key, revokedKeyIds: [] };
  }

  /** Names a live key (null clears the name). */
  async rename(tenantId: string, id: string, name: string | null): Promise<KeySummary> {
    if (!isUuid(id)) throw noSuchKey();
    const row = await this.db
      .updateTable('api_keys')
      .set({ name })
      .where('id', 'in', this.#live(this.db, tenantId).clearSelect().select('id').where('id', '=', id))
      .returning(SUMMARY_COLUMNS)
      .executeTakeFirst();
    if (!row) throw noSuchKey();
    return summaryOf(row);
  }

  /**
   * Mints the replacement of a live key (same kind, app or user, and name) and lets the old key
   * work for `overlapSeconds` more (0: revoked at once). A key already rotated is refused (409):
   * its replacement is the one to rotate. A CLI key is rotated only by the user it belongs to
   * (`rotatedBy`; 403 for anyone else).
   */
  async rotate(
    tenantId: string,
    id: string,
    rotatedBy: string,
    overlapSeconds: number = DEFAULT_ROTATION_OVERLAP_SECONDS,
    handOver?: KeyHandOver,
  ): Promise<MintedKey & { replaced: KeySummary }> {
    if (!isUuid(id)) throw noSuchKey();
    const result = await this.db.transaction().execute(async (trx) => {
      const old = await this.#live(trx, tenantId).where('id', '=', id).forUpdate().executeTakeFirst();
      if (!old) throw noSuchKey();
      // The replacement of a CLI key acts as the person it belongs to: another owner holding it
      // could act in their name. Revoking it is enough to end it; they sign in again for a new one.
      if (old.kind === 'cli' && old.user_id !== rotatedBy) {
        throw new KeyError(
          403,
          'A CLI key is rotated only by the person it belongs to; revoke it instead (they get a new one with service login)',
          'FORBIDDEN',
        );
      }
      if (old.expires_at) {
        throw new KeyError(409, 'This key was already rotated; rotate its replacement instead', 'CONFLICT');
      }
      const issued = await new KeyStore(trx).issue({
        tenantId,
        kind: old.kind,
        appId: old.app_id,
        userId: old.user_id,
        name: old.name,
      });
      await handOver?.(trx, old.id, issued);
      const at = new Date(this.now());
      const ends = new Date(at.getTime() + overlapSeconds * 1000);
      const replaced = await trx
        .updateTable('api_keys')
        .set(overlapSeconds === 0 ? { revoked_at: at, expires_at: at } : { expires_at: ends })
        .where('id', '=', old.id)
        .returning(SUMMARY_COLUMNS)
        .executeTakeFirstOrThrow();
      // Other instances drop their cached copy, so the overlap's end holds there too, and forget
      // the key again as the overlap ends, so its event streams end then on every instance.
      await sendNotices(trx, keyNotices([old.id], overlapSeconds === 0 ? undefined : ends));
      const fresh = await this.#live(trx, tenantId).where('id', '=', issued.id).executeTakeFirstOrThrow();
      return { key: summaryOf(fresh), apiKey: issued.key, replaced: summaryOf(replaced) };
    });
    this.keys.forget([id]);
    if (result.replaced.expiresAt && overlapSeconds > 0) this.keys.forgetAt(id, result.replaced.expiresAt);
    return result;
  }

  /**
   * Revokes a live App Key or CLI key at once, here and on every instance. The App Key a
   * deployment holds is refused (409): the deployment would be left calling with a dead key and
   * no way to get another; rotating it hands the replacement over, deleting the app revokes it.
   */
  async revoke(tenantId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw noSuchKey();
    const live = await this.#live(this.db, tenantId).where('id', '=', id).executeTakeFirst();
    if (!live) throw noSuchKey();
    const holder = await this.db
      .selectFrom('deployments')
      .innerJoin('apps', 'apps.id', 'deployments.app_id')
      .select('apps.slug')
      .where('deployments.app_key_id', '=', id)
      .where('deployments.tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (holder) {
      throw new KeyError(
        409,
        `This is the App Key of the deployment "${holder.slug}": rotate it (the platform hands the new key to the deployment and restarts it), or delete the app`,
        'DEPLOYMENT_KEY',
      );
    }
    if (!(await this.keys.revoke(id, tenantId))) throw noSuchKey();
  }

  /**
   * A key just minted, live or not: a CLI key minted at the same moment for the same account (a
   * second request racing this one) may already have replaced it, as it would a moment later.
   */
  async #minted(tenantId: string, id: string): Promise<KeySummary> {
    return summaryOf(
      await this.db
        .selectFrom('api_keys')
        .select(SUMMARY_COLUMNS)
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .executeTakeFirstOrThrow(),
    );
  }

  /** The tenant's App Keys and CLI keys that still work. */
  #live(db: Kysely<Database> | Transaction<Database>, tenantId: string) {
    return db
      .selectFrom('api_keys')
      .select(SUMMARY_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('kind', 'in', MANAGED_KEY_KINDS)
      .where(liveKeyAt(this.now()));
  }
}

function summaryOf(row: KeyRow): KeySummary {
  return {
    id: row.id,
    kind: row.kind as ManagedKeyKind,
    name: row.name,
    prefix: row.prefix,
    appId: row.app_id,
    userId: row.user_id,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
  };
}
