import { type Kysely, sql, type Transaction } from 'kysely';
import { appendEvents, type EventDraft } from '../events/log.js';
import type { Database, LedgerKind } from '../store/database.js';
import { type Notice, sendNotices } from '../store/notices.js';
import { columnList, rowsFromJson } from '../store/rows-from-json.js';

export interface LedgerPosting {
  tenantId: string;
  /** Signed integer micros: positive credits the wallet, negative debits it. */
  amountMicros: number;
  kind: LedgerKind;
  /** Unique per tenant. Posting the same key again changes nothing and returns the first entry. */
  idempotencyKey: string;
  description?: string;
}

export interface LedgerResult {
  entryId: number;
  balanceAfterMicros: number;
  /** False when the idempotency key had been posted before (nothing changed this time). */
  applied: boolean;
}

/**
 * NOTIFY channel of wallet moves, sent on commit: `tenantId:balanceMicros` pairs separated by
 * commas. Balance caches forget the tenants; metering sets leases aside when a balance runs low.
 */
export const WALLETS_CHANNEL = 'service_wallets';

/** Reads a wallets-channel payload; malformed pairs are skipped. */
export function parseWalletNotice(payload: string): Array<{ tenantId: string; balanceMicros: number }> {
  return payload.split(',').flatMap((pair) => {
    const [tenantId, balance] = pair.split(':');
    const balanceMicros = Number(balance);
    return tenantId && Number.isSafeInteger(balanceMicros) ? [{ tenantId, balanceMicros }] : [];
  });
}

/**
 * Appends one ledger entry and moves the wallet by the same amount in one transaction, so the
 * wallet balance always equals the sum of the tenant's ledger.
 */
export async function post(db: Kysely<Database>, posting: LedgerPosting): Promise<LedgerResult> {
  return db.transaction().execute((trx) => applyPosting(trx, posting));
}

/**
 * `post()` inside a transaction the caller holds. A posting that moves the wallet (a purchase, a
 * refund, a grant) tells the tenant's apps, as settlement does for the calls it bills.
 */
export async function applyPosting(
  trx: Transaction<Database>,
  posting: LedgerPosting,
): Promise<LedgerResult> {
  const [result] = await applyPostings(trx, [posting]);
  if (result!.applied) {
    await appendEvents(
      trx,
      await balanceChangedEvents(trx, new Map([[posting.tenantId, result!.balanceAfterMicros]])),
    );
  }
  return result!;
}

/** A `billing.balance_changed` to every app of each tenant, with the tenant's balance. */
export async function balanceChangedEvents(
  trx: Transaction<Database>,
  balances: Map<string, number>,
): Promise<EventDraft[]> {
  if (balances.size === 0) return [];
  const apps = await trx
    .selectFrom('apps')
    .select(['id', 'tenant_id'])
    .where('tenant_id', 'in', [...balances.keys()])
    .execute();
  return apps.map(
    (app): EventDraft => ({
      appId: app.id,
      kind: 'billing.balance_changed',
      fields: { remaining_micros: Math.max(0, balances.get(app.tenant_id)!) },
    }),
  );
}

/**
 * Several postings inside a transaction the caller holds (the metering settlement writes its
 * usage rows, events and spend counters in the same one), with a few multi-row statements
 * whatever their number. Locks the tenants' wallet rows, in a fixed order, until the caller
 * commits: that orders concurrent postings for one tenant. Postings apply in the order given; a
 * key posted before (or twice in the list) applies once.
 */
export interface PostingOptions {
  /**
   * The caller vouches that every key is new (a settlement's first attempt, keyed by fresh usage
   * ids): earlier postings are not looked up, and a repeated key aborts the transaction with a
   * unique violation, after which the caller retries without this. Saves a read per batch.
   */
  freshKeys?: boolean;
  /** Collects the wallet NOTIFY instead of sending it (the caller sends its transaction's at once). */
  notices?: Notice[];
}

export async function applyPostings(
  trx: Transaction<Database>,
  postings: LedgerPosting[],
  options: PostingOptions = {},
): Promise<LedgerResult[]> {
  for (const posting of postings) {
    if (!Number.isSafeInteger(posting.amountMicros))
      throw new RangeError('amountMicros must be a safe integer');
  }
  const tenantIds = [...new Set(postings.map((p) => p.tenantId))].sort();
  if (tenantIds.length === 0) return [];
  if (options.freshKeys) return applyFreshPostings(trx, postings, tenantIds, options.notices);
  let wallets = await lockWallets(trx, tenantIds);
  if (wallets.length < tenantIds.length) {
    // A tenant's first posting makes its wallet.
    await trx
      .insertInto('wallets')
      .values(tenantIds.map((tenant_id) => ({ tenant_id })))
      .onConflict((oc) => oc.column('tenant_id').doNothing())
      .execute();
    wallets = await lockWallets(trx, tenantIds);
  }
  const balances = new Map(wallets.map((w) => [w.tenant_id, w.balance_micros]));
  const earlier = await trx
    .selectFrom('ledger_entries')
    .select(['id', 'tenant_id', 'idempotency_key', 'balance_after_micros'])
    .where('tenant_id', 'in', tenantIds)
    .where(
      'idempotency_key',
      'in',
      postings.map((p) => p.idempotencyKey),
    )
    .execute();
  const posted = new Map<string, LedgerResult>(
    earlier.map((e) => [
      `${e.tenant_id}|${e.idempotency_key}`,
      { entryId: e.id, balanceAfterMicros: e.balance_after_micros, applied: false },
    ]),
  );

  const fresh: Array<{ key: string; posting: LedgerPosting; balanceAfter: number }> = [];
  const planned = new Set<string>();
  for (const posting of postings) {
    const key = `${posting.tenantId}|${posting.idempotencyKey}`;
    if (posted.has(key) || planned.has(key)) continue;
    planned.add(key);
    const balanceAfter = balances.get(posting.tenantId)! + posting.amountMicros;
    if (!Number.isSafeInteger(balanceAfter))
      throw new RangeError('The wallet balance would leave the safe range');
    balances.set(posting.tenantId, balanceAfter);
    fresh.push({ key, posting, balanceAfter });
  }
  if (fresh.length > 0) {
    const inserted = await insertEntries(
      trx,
      fresh.map(({ posting, balanceAfter }) => ({
        tenant_id: posting.tenantId,
        amount_micros: posting.amountMicros,
        kind: posting.kind,
        idempotency_key: posting.idempotencyKey,
        balance_after_micros: balanceAfter,
        description: posting.description ?? null,
      })),
    );
    const ids = new Map(inserted.map((row) => [`${row.tenant_id}|${row.idempotency_key}`, row.id]));
    for (const { key, balanceAfter } of fresh) {
      posted.set(key, { entryId: ids.get(key)!, balanceAfterMicros: balanceAfter, applied: true });
    }
    const moved = [...new Set(fresh.map((f) => f.posting.tenantId))];
    for (const tenantId of moved) {
      await trx
        .updateTable('wallets')
        .set({ balance_micros: balances.get(tenantId)!, updated_at: sql`now()` })
        .where('tenant_id', '=', tenantId)
        .execute();
    }
    await notifyWallets(trx, moved, balances, options.notices);
  }
  // A key listed twice applies once; its second mention reports it as already posted.
  const seen = new Set<string>();
  return postings.map((posting) => {
    const key = `${posting.tenantId}|${posting.idempotencyKey}`;
    const result = posted.get(key)!;
    const first = !seen.has(key);
    seen.add(key);
    return first ? result : { ...result, applied: false };
  });
}

/**
 * New postings (keys vouched fresh): each wallet is moved and locked by one UPDATE, the entries
 * inserted with the balance after each, in order.
 */
async function applyFreshPostings(
  trx: Transaction<Database>,
  postings: LedgerPosting[],
  tenantIds: string[],
  notices: Notice[] | undefined,
): Promise<LedgerResult[]> {
  const balances = new Map<string, number>();
  for (const tenantId of tenantIds) {
    const delta = postings.filter((p) => p.tenantId === tenantId).reduce((sum, p) => sum + p.amountMicros, 0);
    const wallet = await trx
      .updateTable('wallets')
      .set({ balance_micros: sql`balance_micros + ${delta}`, updated_at: sql`now()` })
      .where('tenant_id', '=', tenantId)
      .returning('balance_micros')
      .executeTakeFirst();
    if (!wallet) throw new Error(`Tenant ${tenantId} has no wallet to post to`);
    if (!Number.isSafeInteger(wallet.balance_micros))
      throw new RangeError('The wallet balance left the safe range');
    balances.set(tenantId, wallet.balance_micros - delta);
  }
  const rows = postings.map((posting) => {
    const balanceAfter = balances.get(posting.tenantId)! + posting.amountMicros;
    balances.set(posting.tenantId, balanceAfter);
    return {
      tenant_id: posting.tenantId,
      amount_micros: posting.amountMicros,
      kind: posting.kind,
      idempotency_key: posting.idempotencyKey,
      balance_after_micros: balanceAfter,
      description: posting.description ?? null,
    };
  });
  const inserted = await insertEntries(trx, rows);
  const ids = new Map(inserted.map((row) => [`${row.tenant_id}|${row.idempotency_key}`, row.id]));
  await notifyWallets(trx, tenantIds, balances, notices);
  return rows.map((row) => ({
    entryId: ids.get(`${row.tenant_id}|${row.idempotency_key}`)!,
    balanceAfterMicros: row.balance_after_micros,
    applied: true,
  }));
}

const ENTRY_COLUMNS = {
  tenant_id: 'uuid',
  amount_micros: 'bigint',
  kind: 'text',
  idempotency_key: 'text',
  balance_after_micros: 'bigint',
  description: 'text',
};

/** Appends ledger rows in one statement (a settlement batch posts hundreds at once). */
async function insertEntries(
  trx: Transaction<Database>,
  rows: Array<{ [column in keyof typeof ENTRY_COLUMNS]: unknown }>,
): Promise<Array<{ id: number; tenant_id: string; idempotency_key: string }>> {
  const inserted = await sql<{ id: number; tenant_id: string; idempotency_key: string }>`
    insert into ledger_entries ${columnList(ENTRY_COLUMNS)} ${rowsFromJson(ENTRY_COLUMNS, rows)}
    returning id, tenant_id, idempotency_key`.execute(trx);
  return inserted.rows;
}

async function notifyWallets(
  trx: Transaction<Database>,
  tenantIds: string[],
  balances: Map<string, number>,
  notices: Notice[] | undefined,
): Promise<void> {
  const notice: Notice = [
    WALLETS_CHANNEL,
    tenantIds.map((tenantId) => `${tenantId}:${balances.get(tenantId)}`).join(','),
  ];
  if (notices) notices.push(notice);
  else await sendNotices(trx, [notice]);
}

/**
 * Locks the tenants' wallet rows until the transaction ends and reads their balances. The fixed
 * order keeps instances locking the same wallets from deadlocking; every admission and posting
 * of a tenant goes through this lock.
 */
export async function lockWallets(trx: Transaction<Database>, tenantIds: string[]) {
  return trx
    .selectFrom('wallets')
    .select(['tenant_id', 'balance_micros'])
    .where('tenant_id', 'in', tenantIds)
    .orderBy('tenant_id')
    .forUpdate()
    .execute();
}

/** The wallet balance in micros; a tenant without a wallet has 0. */
export async function balanceMicros(db: Kysely<Database>, tenantId: string): Promise<number> {
  const row = await db
    .selectFrom('wallets')
    .select('balance_micros')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.balance_micros ?? 0;
}

/** Micros to USD rounded to cents (half away from zero), for the legacy `_usd` fields. */
export function microsToUsd(micros: number): number {
  const cents = Math.sign(micros) * Math.round(Math.abs(micros) / 10_000);
  return cents / 100 + 0;
}
