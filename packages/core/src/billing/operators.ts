import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { setTenantStatus, type TenantStatuses } from '../identity/tenant-status.js';
import type { Database, OperatorActionKind, TenantStatus } from '../store/database.js';
import { applyPosting } from './ledger.js';

/** The largest single grant: USD 10,000. */
export const MAX_GRANT_MICROS = 10_000_000_000;

/** A refusal of an operator action, with the status and flat code surfaces answer it with. */
export class OperatorError extends Error {
  override name = 'OperatorError';
  constructor(
    readonly status: 404 | 409,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TenantOverview {
  id: string;
  name: string;
  status: TenantStatus;
  balanceMicros: number;
  /** Emails of the workspace's owners, to tell tenants apart. */
  ownerEmails: string[];
  createdAt: Date;
}

/** One row of the audit trail. */
export interface OperatorAction {
  id: number;
  tenantId: string;
  action: OperatorActionKind;
  operator: string;
  reason: string | null;
  amountMicros: number | null;
  ledgerEntryId: number | null;
  createdAt: Date;
}

export interface ActionInput {
  tenantId: string;
  /** Who acts: an admin's email, or `cli:<os user>`. */
  operator: string;
  reason: string | null;
}

export interface GrantResult {
  action: OperatorAction;
  balanceAfterMicros: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What platform operators do to tenants: grant credit, suspend, resume, and look tenants up. Each
 * action and its audit row commit together, so the trail has every change and nothing else.
 *
 * @see docs/operators.md
 */
export class Operators {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly statuses: TenantStatuses,
  ) {}

  /** Tenants, newest first. */
  async listTenants(page: { limit: number; offset: number }): Promise<TenantOverview[]> {
    const rows = await this.#tenants()
      .orderBy('tenants.created_at', 'desc')
      .orderBy('tenants.id')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return this.#withOwners(rows);
  }

  /** One tenant, or null (an id that is not a UUID is simply not found). */
  async getTenant(tenantId: string): Promise<TenantOverview | null> {
    if (!UUID.test(tenantId)) return null;
    const row = await this.#tenants().where('tenants.id', '=', tenantId).executeTakeFirst();
    return row ? (await this.#withOwners([row]))[0]! : null;
  }

  /** The tenants whose owners include the user with this email (case-insensitive). */
  async tenantsOwnedBy(email: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('memberships.tenant_id')
      .where('memberships.role', '=', 'owner')
      .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
      .orderBy('memberships.created_at')
      .execute();
    return rows.map((row) => row.tenant_id);
  }

  /** A tenant's audit trail, newest first. */
  async actions(tenantId: string, limit = 50): Promise<OperatorAction[]> {
    if (!UUID.test(tenantId)) return [];
    const rows = await this.db
      .selectFrom('operator_actions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(actionOf);
  }

  /** Credits the tenant's wallet with a `grant` ledger entry. */
  async grant(input: ActionInput & { amountMicros: number }): Promise<GrantResult> {
    if (
      !Number.isSafeInteger(input.amountMicros) ||
      input.amountMicros <= 0 ||
      input.amountMicros > MAX_GRANT_MICROS
    ) {
      throw new RangeError('a grant is a positive amount of at most USD 10,000');
    }
    return this.db.transaction().execute(async (trx) => {
      await lockTenant(trx, input.tenantId);
      const entry = await applyPosting(trx, {
        tenantId: input.tenantId,
        amountMicros: input.amountMicros,
        kind: 'grant',
        idempotencyKey: `operator-grant:${randomUUID()}`,
        ...(input.reason ? { description: input.reason } : {}),
      });
      const action = await record(trx, input, 'grant', {
        amountMicros: input.amountMicros,
        ledgerEntryId: entry.entryId,
      });
      return { action, balanceAfterMicros: entry.balanceAfterMicros };
    });
  }

  /** Suspends the tenant; 409 when it already is. Its keys keep existing. */
  suspend(input: ActionInput): Promise<OperatorAction> {
    return this.#move(input, 'suspended');
  }

  /** Resumes a suspended tenant; 409 when it is not suspended. */
  resume(input: ActionInput): Promise<OperatorAction> {
    return this.#move(input, 'active');
  }

  async #move(input: ActionInput, status: TenantStatus): Promise<OperatorAction> {
    const action = await this.db.transaction().execute(async (trx) => {
      await lockTenant(trx, input.tenantId);
      if (!(await setTenantStatus(trx, input.tenantId, status))) {
        throw status === 'suspended'
          ? new OperatorError(409, 'TENANT_ALREADY_SUSPENDED', 'The tenant is already suspended')
          : new OperatorError(409, 'TENANT_NOT_SUSPENDED', 'The tenant is not suspended');
      }
      return record(trx, input, status === 'suspended' ? 'suspend' : 'resume');
    });
    // Other instances hear the notice; this one need not wait for it.
    this.statuses.forget(input.tenantId);
    return action;
  }

  #tenants() {
    return this.db
      .selectFrom('tenants')
      .leftJoin('wallets', 'wallets.tenant_id', 'tenants.id')
      .select([
        'tenants.id',
        'tenants.name',
        'tenants.status',
        'tenants.created_at',
        'wallets.balance_micros',
      ]);
  }

  async #withOwners(
    rows: Array<{
      id: string;
      name: string;
      status: TenantStatus;
      created_at: Date;
      balance_micros: number | null;
    }>,
  ): Promise<TenantOverview[]> {
    const owners = new Map<string, string[]>();
    if (rows.length > 0) {
      const found = await this.db
        .selectFrom('memberships')
        .innerJoin('users', 'users.id', 'memberships.user_id')
        .select(['memberships.tenant_id', 'users.email'])
        .where('memberships.role', '=', 'owner')
        .where(
          'memberships.tenant_id',
          'in',
          rows.map((row) => row.id),
        )
        .orderBy('memberships.created_at')
        .execute();
      for (const { tenant_id, email } of found) {
        if (email) owners.set(tenant_id, [...(owners.get(tenant_id) ?? []), email]);
      }
    }
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      status: row.status,
      balanceMicros: row.balance_micros ?? 0,
      ownerEmails: owners.get(row.id) ?? [],
      createdAt: row.created_at,
    }));
  }
}

/** Locks the tenant's row for the action, or refuses (404) a tenant that does not exist. */
async function lockTenant(trx: Transaction<Database>, tenantId: string): Promise<void> {
  const found = UUID.test(tenantId)
    ? await trx.selectFrom('tenants').select('id').where('id', '=', tenantId).forUpdate().executeTakeFirst()
    : undefined;
  if (!found) throw new OperatorError(404, 'TENANT_NOT_FOUND', 'Tenant not found');
}

async function record(
  trx: Transaction<Database>,
  input: ActionInput,
  action: OperatorActionKind,
  grant: { amountMicros: number; ledgerEntryId: number } | null = null,
): Promise<OperatorAction> {
  const row = await trx
    .insertInto('operator_actions')
    .values({
      tenant_id: input.tenantId,
      action,
      operator: input.operator,
      reason: input.reason,
      amount_micros: grant?.amountMicros ?? null,
      ledger_entry_id: grant?.ledgerEntryId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return actionOf(row);
}

function actionOf(row: {
  id: number;
  tenant_id: string;
  action: OperatorActionKind;
  operator: string;
  reason: string | null;
  amount_micros: number | null;
  ledger_entry_id: number | null;
  created_at: Date;
}): OperatorAction {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    action: row.action,
    operator: row.operator,
    reason: row.reason,
    amountMicros: row.amount_micros,
    ledgerEntryId: row.ledger_entry_id,
    createdAt: row.created_at,
  };
}
