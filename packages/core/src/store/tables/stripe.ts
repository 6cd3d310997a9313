/** Tables of the Stripe payment processor. */
import type { CreatedAt } from './columns.js';

export interface StripeCustomersTable {
  tenant_id: string;
  /** Stripe's `cus_…` id. */
  customer_id: string;
  created_at: CreatedAt;
}

export interface StripeTables {
  stripe_customers: StripeCustomersTable;
}
