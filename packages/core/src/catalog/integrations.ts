import { type Kysely, type Selectable, sql } from 'kysely';
import { TtlCache } from '../internal/ttl-cache.js';
import { notifyCatalogChanged } from '../store/catalog-changes.js';
import type { Database, IntegrationsTable } from '../store/database.js';
import { integrationDocsOf, integrationLogoOf } from './icons.js';
import { tenantIntegrationStates } from './tenant-integrations.js';

/**
 * The integrations of the catalog as callers see them: the public shape (anonymous callers, kept
 * five minutes on the platform clock and dropped when an admin changes an integration), the
 * stored row with a tenant's overlay (signed-in callers, never cached), tenants' own switches
 * and the admins' switch.
 *
 * @see docs/api/integrations.md
 */

type IntegrationRecord = Selectable<IntegrationsTable>;

/** How long the anonymous list and details are served from memory. */
export const PUBLIC_INTEGRATIONS_TTL_MS = 5 * 60_000;

/** The public shape of an integration (anonymous callers). */
export interface PublicIntegration {
  provider: string;
  name: string;
  description: string;
  category: string;
  default_profile: string;
  supported_profiles: string[];
  logo_url: string;
  docs_url: string;
  icon_name: string | null;
  env_bootstrap: IntegrationRecord['env_bootstrap'];
}

/** The stored row as a signed-in caller sees it, with the tenant's overlay. */
export interface TenantIntegration {
  id: string;
  provider: string;
  name: string;
  description: string;
  category: string;
  enabled: boolean;
  default_profile: string;
  supported_profiles: string[];
  logo_url: string;
  docs_url: string;
  env_bootstrap: IntegrationRecord['env_bootstrap'];
  tenantEnabled: boolean;
  provisioned: boolean;
  /** Usage events of the tenant on this integration since the start of the month (UTC). */
  usageThisMonth: number;
  /** Their cost, in micros. */
  costThisMonth: number;
}

/** An integration as the catalog's own logic needs it (kind included). */
export interface IntegrationInfo extends PublicIntegration {
  id: string;
  enabled: boolean;
  kind: IntegrationRecord['kind'];
}

/** The row's logo and docs page, or the platform's own (a generated logo, a generated page) when it names none. */
const linksOf = (row: IntegrationRecord, baseUrl: string) => ({
  logo_url: integrationLogoOf(baseUrl, row),
  docs_url: integrationDocsOf(baseUrl, row),
});

const publicShape = (row: IntegrationRecord, baseUrl: string): PublicIntegration => ({
  provider: row.provider,
  name: row.name,
  description: row.description,
  category: row.category,
  default_profile: row.default_profile,
  supported_profiles: row.supported_profiles,
  ...linksOf(row, baseUrl),
  icon_name: row.icon_name,
  env_bootstrap: row.env_bootstrap,
});

/** The first instant of the month of `now`, UTC. */
export function startOfMonthUtc(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

export class Integrations {
  readonly #publicList: TtlCache<'all', PublicIntegration[]>;
  readonly #publicDetail: TtlCache<string, PublicIntegration | null>;
  /**
   * Counts forgettings: a read that overlapped one may have read the store before the change it
   * announced, so it answers its caller but is not cached.
   */
  #generation = 0;

  constructor(
    private readonly db: Kysely<Database>,
    /** Where the platform serves the generated logos and docs pages. */
    private readonly baseUrl: string,
    private readonly now: () => number = Date.now,
  ) {
    this.#publicList = new TtlCache({ ttlMs: PUBLIC_INTEGRATIONS_TTL_MS, now });
    // Unknown slugs are cached too (as null), so the bound keeps a flood of them in check.
    this.#publicDetail = new TtlCache({ ttlMs: PUBLIC_INTEGRATIONS_TTL_MS, maxEntries: 1000, now });
  }

  /** Drops the anonymous caches (a change notice of `integrations` arrived). */
  forget(): void {
    this.#generation++;
    this.#publicList.clear();
    this.#publicDetail.clear();
  }

  /** The enabled integrations in their public shape, by name. Cached. */
  async publicList(): Promise<PublicIntegration[]> {
    const cached = this.#publicList.get('all');
    if (cached) return cached;
    const generation = this.#generation;
    const rows = await this.db
      .selectFrom('integrations')
      .selectAll()
      .where('enabled', '=', true)
      .orderBy('name')
      .orderBy('provider')
      .execute();
    const list = rows.map((row) => publicShape(row, this.baseUrl));
    if (generation === this.#generation) this.#publicList.set('all', list);
    return list;
  }

  /** One enabled integration in its public shape, or null (unknown or disabled). Cached. */
  async publicDetail(slug: string): Promise<PublicIntegration | null> {
    const cached = this.#publicDetail.get(slug);
    if (cached !== undefined) return cached;
    const generation = this.#generation;
    const row = await this.#row(slug);
    const detail = row?.enabled ? publicShape(row, this.baseUrl) : null;
    if (generation === this.#generation) this.#publicDetail.set(slug, detail);
    return detail;
  }

  /** Any integration of the catalog, enabled or not (never cached), or null. */
  async find(slug: string): Promise<IntegrationInfo | null> {
    const row = await this.#row(slug);
    return row
      ? { ...publicShape(row, this.baseUrl), id: row.id, enabled: row.enabled, kind: row.kind }
      : null;
  }

  /**
   * Every integration (disabled ones too, flagged) with `tenantId`'s overlay, by name. `detail`:
   * `tenantEnabled` as one integration's detail says it (the LLM gateway's own-key rule).
   */
  async forTenant(tenantId: string, options: { detail?: boolean } = {}): Promise<TenantIntegration[]> {
    const now = new Date(this.now());
    const [rows, states, usage] = await Promise.all([
      this.db.selectFrom('integrations').selectAll().orderBy('name').orderBy('provider').execute(),
      tenantIntegrationStates(this.db, tenantId),
      this.#usageThisMonth(tenantId, now),
    ]);
    return rows.map((row) => {
      const state = states.get(row.provider);
      const spent = usage.get(row.provider);
      return {
        id: row.id,
        provider: row.provider,
        name: row.name,
        description: row.description,
        category: row.category,
        enabled: row.enabled,
        default_profile: row.default_profile,
        supported_profiles: row.supported_profiles,
        ...linksOf(row, this.baseUrl),
        env_bootstrap: row.env_bootstrap,
        tenantEnabled: (options.detail ? state?.chosen : state?.tenantEnabled) ?? false,
        provisioned: state?.provisioned ?? false,
        usageThisMonth: spent?.events ?? 0,
        costThisMonth: spent?.cost ?? 0,
      };
    });
  }

  /** One integration with `tenantId`'s overlay, or null when there is none by that slug. */
  async oneForTenant(tenantId: string, slug: string): Promise<TenantIntegration | null> {
    return (await this.forTenant(tenantId, { detail: true })).find((row) => row.provider === slug) ?? null;
  }

  /** Sets the tenant's own switch of an integration (upsert). */
  async setTenantSwitch(tenantId: string, provider: string, enabled: boolean, userId: string): Promise<void> {
    await this.db
      .insertInto('tenant_integrations')
      .values({ tenant_id: tenantId, provider, enabled, updated_by: userId })
      .onConflict((oc) =>
        oc
          .columns(['tenant_id', 'provider'])
          .doUpdateSet({ enabled, updated_by: userId, updated_at: sql`now()` }),
      )
      .execute();
  }

  /**
   * The admins' switch: a disabled integration leaves the public list and pricing, on every
   * instance, as the change notice arrives. False when there is no such integration.
   */
  async setEnabled(slug: string, enabled: boolean): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('integrations')
        .set({ enabled, updated_at: sql`now()` })
        .where('provider', '=', slug)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) return false;
      await notifyCatalogChanged(trx, 'integrations');
      await notifyCatalogChanged(trx, 'pricing');
      return true;
    });
  }

  /** Every integration with its admin switch, for operators. */
  async adminList(): Promise<Array<{ provider: string; name: string; kind: string; enabled: boolean }>> {
    return this.db
      .selectFrom('integrations')
      .select(['provider', 'name', 'kind', 'enabled'])
      .orderBy('provider')
      .execute();
  }

  #row(slug: string): Promise<IntegrationRecord | undefined> {
    return this.db.selectFrom('integrations').selectAll().where('provider', '=', slug).executeTakeFirst();
  }

  async #usageThisMonth(tenantId: string, now: Date): Promise<Map<string, { events: number; cost: number }>> {
    const rows = await this.db
      .selectFrom('usage_events')
      .select((eb) => [
        'provider',
        eb.fn.countAll<string>().as('events'),
        eb.fn.coalesce(eb.fn.sum<string>('cost_micros'), sql<string>`0`).as('cost'),
      ])
      .where('tenant_id', '=', tenantId)
      .where('created_at', '>=', startOfMonthUtc(now))
      .groupBy('provider')
      .execute();
    return new Map(rows.map((row) => [row.provider, { events: Number(row.events), cost: Number(row.cost) }]));
  }
}
