/**
 * What the platform needs of a payment processor. A processor takes the buyer somewhere to pay
 * (`startPurchase` answers that URL) and, once paid, credits the wallet through `postPayment`,
 * keyed by its own event id, so a replayed or concurrent delivery of one event credits once.
 *
 * @see docs/api/payments.md
 */
export interface PaymentProcessor {
  /** Names the processor in ledger keys and purchase rows (`dev`, `stripe`). */
  readonly name: string;
  /**
   * Starts a purchase of `amountMicros` of credit for the tenant: answers the URL to send the
   * buyer to. Once paid, the buyer is sent to `returnUrl`; the credit lands through `postPayment`.
   */
  startPurchase(purchase: PurchaseRequest): Promise<{ url: string }>;
}

export interface PurchaseRequest {
  tenantId: string;
  /** Whole USD micros, positive. */
  amountMicros: number;
  returnUrl: string;
  /** The signed-in user buying, when known. */
  userId?: string;
  /**
   * The same on every retry of one request (from its `Idempotency-Key`): a retry after a failure
   * records the same purchase and asks the processor for the same charge, never a second one.
   */
  retryKey?: string | null;
}

/** Credit packs in USD (the usage-framing presets); a custom amount is any whole USD in the bounds. */
export const CREDIT_PACKS_USD = [5, 25, 100] as const;
export const MIN_PURCHASE_USD = 1;
export const MAX_PURCHASE_USD = 1000;
export const MICROS_PER_USD = 1_000_000;

/**
 * The micros of `usd` when it is a whole number of cents (zero and negatives included); null for
 * anything else. The one rule every USD amount a caller sends is held to (purchases, grants).
 */
export function wholeCentsMicros(usd: number): number | null {
  const cents = Math.round(usd * 100);
  // Exact: a number of whole cents reads back as itself (`12.34` does, `12.3400000001` does not,
  // nor does `1e-9`, which a tolerance would round to zero cents).
  if (!Number.isFinite(usd) || cents / 100 !== usd) return null;
  return cents * (MICROS_PER_USD / 100);
}

/**
 * The micros of a purchase of `usd`: a credit pack, or a custom amount in whole cents from
 * `MIN_PURCHASE_USD` to `MAX_PURCHASE_USD`; null for anything else.
 */
export function purchaseMicros(usd: number): number | null {
  if (usd < MIN_PURCHASE_USD || usd > MAX_PURCHASE_USD) return null;
  return wholeCentsMicros(usd);
}

/** Micros as `USD 12.34` (rounded to cents), as pages show amounts. */
export function formatUsd(micros: number): string {
  const cents = Math.round(Math.abs(micros) / (MICROS_PER_USD / 100));
  // An overdraft too small to show in cents reads as zero, not "-USD 0.00".
  const sign = micros < 0 && cents > 0 ? '-' : '';
  return `${sign}USD ${(cents / 100).toFixed(2)}`;
}
