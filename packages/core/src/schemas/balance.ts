import { z } from 'zod';

/** `GET /api/billing/balance` 200 body. */
export const billingBalanceSchema = z.object({
  credits_remaining_micros: z.number().int().nonnegative(),
  currency: z.literal('USD'),
  top_up_url: z.string(),
});
export type BillingBalance = z.infer<typeof billingBalanceSchema>;

/** `GET /api/v1/balance` 200 body. */
export const legacyBalanceSchema = z.object({ balance_usd: z.number(), tenant_id: z.string() });
export type LegacyBalance = z.infer<typeof legacyBalanceSchema>;

/** `GET /api/cli/balance` 200 body. */
export const cliBalanceSchema = z.object({ balance_usd: z.number() });
export type CliBalance = z.infer<typeof cliBalanceSchema>;
