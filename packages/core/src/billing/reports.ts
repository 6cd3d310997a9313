import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { listSpendCaps, type SpendCapInput, type SpendCapView, setSpendCap } from './spend-caps.js';
import { listTransactions } from './transactions.js';
import { burnRate, deploymentUsage, integrationUsage, tenantUsage, type UsageRange } from './usage-report.js';

/**
 * What the dashboard reads about a tenant's spending (usage rollups, burn rate, spend caps, the
 * billing history) and the one thing it changes there, the caps.
 *
 * @see docs/api/billing.md
 */
export class BillingReports {
  constructor(private readonly db: Kysely<Database>) {}

  /** Whether `appId` is a deployment of the tenant. */
  async hasDeployment(tenantId: string, appId: string): Promise<boolean> {
    const app = await this.db
      .selectFrom('apps')
      .select('id')
      .where('id', '=', appId)
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    return app !== undefined;
  }

  /** Whether the platform lists an integration with this slug. */
  async hasIntegration(slug: string): Promise<boolean> {
    const integration = await this.db
      .selectFrom('integrations')
      .select('provider')
      .where('provider', '=', slug)
      .executeTakeFirst();
    return integration !== undefined;
  }

  /** A page of the tenant's ledger, newest first (`before`: the cursor of the page before). */
  transactions(tenantId: string, page: { limit: number; before?: number }) {
    return listTransactions(this.db, tenantId, page);
  }

  deploymentUsage(appId: string, range: UsageRange, now: Date) {
    return deploymentUsage(this.db, appId, range, now);
  }

  integrationUsage(tenantId: string, slug: string, tokenMetered: boolean, now: Date) {
    return integrationUsage(this.db, tenantId, slug, tokenMetered, now);
  }

  tenantUsage(tenantId: string, days: number, now: Date) {
    return tenantUsage(this.db, tenantId, days, now);
  }

  burnRate(tenantId: string, balanceMicros: number, now: Date) {
    return burnRate(this.db, tenantId, balanceMicros, now);
  }

  spendCaps(tenantId: string, now: Date): Promise<SpendCapView[]> {
    return listSpendCaps(this.db, tenantId, now);
  }

  /** Sets an app's caps; false when the app is not the tenant's. */
  setSpendCap(tenantId: string, input: SpendCapInput): Promise<boolean> {
    return setSpendCap(this.db, tenantId, input);
  }
}
