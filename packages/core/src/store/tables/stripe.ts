/** Tables of the Stripe payment processor. */
import type { ColumnType } from 'kysely';
import type { CreatedAt } from './columns.js';

export interface StripeCustomersTable {
  tenant_id: string;
  /** Stripe's `cus_…` id. */
  customer_id: string;
  /** Auto-reload: below this balance, charge the saved card for `auto_reload_amount_micros`. */
  auto_reload_threshold_micros: ColumnType<number | null, number | null | undefined, number | null>;
  auto_reload_amount_micros: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the auto-reload in flight started; null when none is. */
  auto_reload_started_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: CreatedAt;
}

export interface StripeTables {
  stripe_customers: StripeCustomersTable;
}
