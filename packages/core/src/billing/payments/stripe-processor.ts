import type { Kysely } from 'kysely';
import Stripe from 'stripe';
import type { Logger } from '../../http/logger.js';
import { isUuid } from '../../internal/uuid.js';
import type { Database } from '../../store/database.js';
import type { Store } from '../../store/index.js';
import { parseWalletNotice, WALLETS_CHANNEL } from '../ledger.js';
import { paymentKey, postPayment } from './post-payment.js';
import type { PaymentProcessor, PurchaseRequest } from './processor.js';
import { recordPurchase } from './purchases.js';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** Where the Stripe API is reached. Default Stripe's own; tests point it at a local stand-in. */
  api?: { host: string; port: number; protocol: 'http' | 'https' };
}

/** A refusal of the Stripe processor, with the status and code the platform answers. */
export class PaymentError extends Error {
  override name = 'PaymentError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What a manual top-up started: its credit lands from the webhook, as a purchase's does. */
export interface ReloadStarted {
  purchaseId: string;
  paymentIntentId: string;
  /** Stripe's status of the charge: `succeeded`, or `processing` while it settles. */
  status: string;
}

/** What a verified webhook delivery did: `applied` is false for a replay or an event not ours. */
export interface WebhookOutcome {
  type: string;
  applied: boolean;
}

/** What `GET /api/billing/customer` shows of a workspace's Stripe customer. */
export interface CustomerSnapshot {
  /** Null until the workspace's first purchase. */
  customerId: string | null;
  /** The card saved on the customer (most recent first), if any. */
  card: { brand: string; last4: string } | null;
  autoReload: AutoReload | null;
}

/** Auto-reload: when the balance falls below `thresholdMicros`, buy `amountMicros` with the saved card. */
export interface AutoReload {
  thresholdMicros: number;
  amountMicros: number;
}

/** An auto-reload started this long ago and not yet credited is taken as failed and may start again. */
export const AUTO_RELOAD_RETRY_MS = 10 * 60_000;

const MICROS_PER_CENT = 10_000;

/**
 * The Stripe processor. A purchase is a Checkout Session of the tenant's Stripe customer (one per
 * tenant, created at its first purchase); credit lands only from the signed webhook:
 * `checkout.session.completed` and `payment_intent.succeeded` credit the purchase keyed by its
 * payment intent (a checkout reports both: one credit), each refund of a
 * `charge.refunded` debits keyed by the refund id, `charge.dispute.created` debits keyed by the
 * dispute id. Each event posts on its own through `postPayment`, so a replay posts nothing and the
 * order of deliveries does not change the final balance.
 */
export class StripePaymentProcessor implements PaymentProcessor {
  readonly name = 'stripe';
  private readonly stripe: Stripe;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: StripeSettings,
  ) {
    // Retries are safe: every creation carries an idempotency key (the library's own, or ours).
    this.stripe = new Stripe(settings.secretKey, { ...settings.api, telemetry: false, maxNetworkRetries: 2 });
  }

  /** Calls Stripe; Stripe away or failing is the platform's 503, not a fault of the request. */
  private async ask<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (
        error instanceof Stripe.errors.StripeConnectionError ||
        error instanceof Stripe.errors.StripeAPIError ||
        error instanceof Stripe.errors.StripeRateLimitError
      ) {
        throw new PaymentError(503, 'PAYMENTS_UNAVAILABLE', 'Stripe is not answering; try again shortly');
      }
      throw error;
    }
  }

  /**
   * As `ask`, for what an event names: null when Stripe has no such object (an event about a
   * charge of another account, or made up), which is not ours to post.
   */
  private async askOrNone<T>(call: () => Promise<T>): Promise<T | null> {
    try {
      return await this.ask(call);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError) return null;
      throw error;
    }
  }

  async startPurchase(request: PurchaseRequest): Promise<{ url: string }> {
    const customer = await this.customerOf(request.tenantId);
    const id = await recordPurchase(this.db, this.name, request);
    // Both carry the ids: the session's for its completion, the payment intent's for its charges.
    const metadata = { tenantId: request.tenantId, purchaseId: id };
    const session = await this.ask(() =>
      this.stripe.checkout.sessions.create(
        {
          mode: 'payment',
          customer,
          client_reference_id: id,
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: 'usd',
                unit_amount: request.amountMicros / MICROS_PER_CENT,
                product_data: { name: 'Workspace credit' },
              },
            },
          ],
          metadata,
          payment_intent_data: { metadata },
          success_url: request.returnUrl,
          cancel_url: request.returnUrl,
        },
        { idempotencyKey: `purchase-${id}` },
      ),
    );
    if (!session.url) throw new Error('Stripe answered a Checkout Session without a url');
    return { url: session.url };
  }

  /**
   * Charges the workspace's saved card, off-session, for `amountMicros` of credit (a manual
   * top-up). The credit lands from the webhook's `payment_intent.succeeded`.
   */
  async reload(request: PurchaseRequest): Promise<ReloadStarted> {
    const customer = await this.storedCustomer(request.tenantId);
    const method = customer
      ? (await this.ask(() => this.stripe.customers.listPaymentMethods(customer, { type: 'card', limit: 1 })))
          .data[0]
      : undefined;
    if (!customer || !method) {
      throw new PaymentError(409, 'NO_SAVED_CARD', 'No card is saved: save one with a setup intent first');
    }
    const id = await recordPurchase(this.db, this.name, request);
    try {
      const intent = await this.ask(() =>
        this.stripe.paymentIntents.create(
          {
            amount: request.amountMicros / MICROS_PER_CENT,
            currency: 'usd',
            customer,
            payment_method: method.id,
            off_session: true,
            confirm: true,
            metadata: { tenantId: request.tenantId, purchaseId: id },
          },
          { idempotencyKey: `reload-${id}` },
        ),
      );
      return { purchaseId: id, paymentIntentId: intent.id, status: intent.status };
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeCardError)) throw error;
      throw new PaymentError(402, 'CARD_DECLINED', `The saved card was declined: ${error.message}`);
    }
  }

  /** The tenant's Stripe customer id, created (once, even when raced) on first use. */
  async customerOf(tenantId: string): Promise<string> {
    const known = await this.storedCustomer(tenantId);
    if (known) return known;
    // The idempotency key makes racing creations answer the one customer.
    const customer = await this.ask(() =>
      this.stripe.customers.create({ metadata: { tenantId } }, { idempotencyKey: `customer-${tenantId}` }),
    );
    await this.db
      .insertInto('stripe_customers')
      .values({ tenant_id: tenantId, customer_id: customer.id })
      .onConflict((oc) => oc.column('tenant_id').doNothing())
      .execute();
    return (await this.storedCustomer(tenantId))!;
  }

  /**
   * A SetupIntent saving a card on the workspace's customer for later off-session charges: its
   * client secret is for Stripe.js on the dashboard to collect the card.
   */
  async setupIntent(
    tenantId: string,
  ): Promise<{ setupIntentId: string; clientSecret: string; customerId: string }> {
    const customerId = await this.customerOf(tenantId);
    const intent = await this.ask(() =>
      this.stripe.setupIntents.create({
        customer: customerId,
        usage: 'off_session',
        metadata: { tenantId },
      }),
    );
    if (!intent.client_secret) throw new Error('Stripe answered a SetupIntent without a client secret');
    return { setupIntentId: intent.id, clientSecret: intent.client_secret, customerId };
  }

  /** A customer portal session of the workspace's customer (its cards, its receipts): its URL. */
  async portal(tenantId: string, returnUrl: string): Promise<{ url: string }> {
    const customer = await this.customerOf(tenantId);
    const session = await this.ask(() =>
      this.stripe.billingPortal.sessions.create({ customer, return_url: returnUrl }),
    );
    return { url: session.url };
  }

  /** The workspace's customer and saved card; asks Stripe only once a customer exists. */
  async snapshot(tenantId: string): Promise<CustomerSnapshot> {
    const customerId = await this.storedCustomer(tenantId);
    if (!customerId) return { customerId: null, card: null, autoReload: null };
    const methods = await this.ask(() =>
      this.stripe.customers.listPaymentMethods(customerId, { type: 'card', limit: 1 }),
    );
    const card = methods.data[0]?.card;
    return {
      customerId,
      card: card ? { brand: card.brand, last4: card.last4 } : null,
      autoReload: await this.autoReloadOf(tenantId),
    };
  }

  /** Sets (or with null, turns off) the workspace's auto-reload; creates its customer if need be. */
  async setAutoReload(tenantId: string, autoReload: AutoReload | null): Promise<void> {
    await this.customerOf(tenantId);
    await this.db
      .updateTable('stripe_customers')
      .set({
        auto_reload_threshold_micros: autoReload?.thresholdMicros ?? null,
        auto_reload_amount_micros: autoReload?.amountMicros ?? null,
      })
      .where('tenant_id', '=', tenantId)
      .execute();
  }

  private async autoReloadOf(tenantId: string): Promise<AutoReload | null> {
    const row = await this.db
      .selectFrom('stripe_customers')
      .select(['auto_reload_threshold_micros', 'auto_reload_amount_micros'])
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    return row?.auto_reload_threshold_micros && row.auto_reload_amount_micros
      ? {
          thresholdMicros: Number(row.auto_reload_threshold_micros),
          amountMicros: Number(row.auto_reload_amount_micros),
        }
      : null;
  }

  /**
   * Watches every wallet posting (the ledger's notices, from any instance) and starts an
   * auto-reload when one leaves a balance below its workspace's threshold.
   */
  followAutoReloads(
    store: Pick<Store, 'listen'>,
    logger: Logger,
    /** The billing page, recorded as the top-ups' return URL. */
    returnUrl: string,
  ): Promise<() => Promise<void>> {
    return store.listen(WALLETS_CHANNEL, (payload) => {
      if (payload === null) return;
      for (const { tenantId, balanceMicros } of parseWalletNotice(payload)) {
        this.autoReloadIfLow(tenantId, balanceMicros, returnUrl).catch((error: unknown) =>
          logger.warn('auto-reload not started', { tenant_id: tenantId, error: String(error) }),
        );
      }
    });
  }

  /**
   * Starts the workspace's auto-reload when `balanceMicros` is below its threshold and none is in
   * flight: the claim is one conditional update, so of all instances seeing the notice one charges.
   * A failed charge is retried only after `AUTO_RELOAD_RETRY_MS`, so a declined card is not hammered.
   */
  async autoReloadIfLow(tenantId: string, balanceMicros: number, returnUrl: string): Promise<boolean> {
    const claimed = await this.db
      .updateTable('stripe_customers')
      .set({ auto_reload_started_at: new Date() })
      .where('tenant_id', '=', tenantId)
      .where('auto_reload_threshold_micros', '>', balanceMicros)
      .where((eb) =>
        eb.or([
          eb('auto_reload_started_at', 'is', null),
          eb('auto_reload_started_at', '<', new Date(Date.now() - AUTO_RELOAD_RETRY_MS)),
        ]),
      )
      .returning('auto_reload_amount_micros')
      .executeTakeFirst();
    if (!claimed?.auto_reload_amount_micros) return false;
    await this.reload({ tenantId, amountMicros: Number(claimed.auto_reload_amount_micros), returnUrl });
    return true;
  }

  async storedCustomer(tenantId: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('stripe_customers')
      .select('customer_id')
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    return row?.customer_id ?? null;
  }

  /** Verifies a webhook delivery's signature, then posts what it reports. */
  async receiveWebhook(rawBody: Uint8Array, signature: string | undefined): Promise<WebhookOutcome> {
    let event: Stripe.Event | null;
    try {
      event = this.stripe.webhooks.constructEvent(
        Buffer.from(rawBody),
        signature ?? '',
        this.settings.webhookSecret,
      );
    } catch (error) {
      // The signature is checked first: a body it covers that is no JSON is said to be so.
      if (error instanceof SyntaxError) {
        throw new PaymentError(400, 'INVALID_REQUEST', 'The webhook body is signed but is not JSON');
      }
      throw new PaymentError(400, 'INVALID_SIGNATURE', 'The Stripe-Signature header does not match the body');
    }
    // Signed JSON that is no event at all (`null`, a number) is not one of ours either.
    if (event === null || typeof event !== 'object') return { type: 'unknown', applied: false };
    const applied = await this.apply(event);
    return { type: typeof event.type === 'string' ? event.type : 'unknown', applied };
  }

  private async apply(event: Stripe.Event): Promise<boolean> {
    // A signed event is Stripe's, but its shape is still checked: one without its object is not ours.
    const object: unknown = event.data?.object;
    if (object === null || typeof object !== 'object') return false;
    switch (event.type) {
      case 'checkout.session.completed':
        return this.completed(event.data.object);
      case 'payment_intent.succeeded':
        return this.paymentSucceeded(event.data.object);
      case 'charge.refunded':
        return this.refunded(event.data.object);
      case 'charge.dispute.created':
        return this.disputed(event.data.object);
      case 'refund.failed':
      case 'refund.updated':
      case 'charge.refund.updated':
        return this.refundUndone(event.data.object);
      default:
        return false;
    }
  }

  private async completed(session: Stripe.Checkout.Session): Promise<boolean> {
    // An asynchronous payment method completes unpaid; only a paid session credits.
    if (session.payment_status !== 'paid') return false;
    return this.creditPurchase(session.metadata);
  }

  /** A top-up's charge, or a checkout's reported a second time: the same purchase's credit. */
  private async paymentSucceeded(intent: Stripe.PaymentIntent): Promise<boolean> {
    return this.creditPurchase(intent.metadata);
  }

  /**
   * Credits the Stripe purchase the metadata names, at the amount the platform asked for, once
   * per purchase: whichever events report it (a completion, its payment intent, a completion
   * without one), the ledger key is the purchase's. A purchase already completed (under the
   * payment intent's key, as earlier releases keyed it) posts nothing again.
   */
  private async creditPurchase(metadata: Stripe.Metadata | null | undefined): Promise<boolean> {
    const purchaseId = metadata?.purchaseId ?? '';
    const tenantId = metadata?.tenantId ?? '';
    if (!isUuid(purchaseId) || !isUuid(tenantId)) return false;
    const purchase = await this.db
      .selectFrom('purchases')
      .select(['amount_micros', 'completed_at'])
      .where('id', '=', purchaseId)
      .where('tenant_id', '=', tenantId)
      .where('processor', '=', this.name)
      .executeTakeFirst();
    if (!purchase || purchase.completed_at !== null) return false;
    const result = await postPayment(
      this.db,
      {
        tenantId,
        processor: this.name,
        eventId: purchaseId,
        kind: 'purchase',
        amountMicros: purchase.amount_micros,
        description: 'Credit purchase (Stripe)',
      },
      async (trx, posted) => {
        if (!posted.applied) return;
        await trx
          .updateTable('purchases')
          .set({ ledger_entry_id: posted.entryId, completed_at: new Date() })
          .where('id', '=', purchaseId)
          .execute();
        // Credit landed: an auto-reload in flight is done, the next low balance may start one.
        await trx
          .updateTable('stripe_customers')
          .set({ auto_reload_started_at: null })
          .where('tenant_id', '=', tenantId)
          .execute();
      },
    );
    return result.applied;
  }

  private async refunded(charge: Stripe.Charge): Promise<boolean> {
    const tenantId = await this.tenantOfCustomer(idOf(charge.customer));
    if (!tenantId) return false;
    // The event's charge does not list its refunds; each refund posts once under its own id.
    const refunds = await this.askOrNone(() => this.stripe.refunds.list({ charge: charge.id, limit: 100 }));
    if (!refunds) return false;
    let applied = false;
    for (const refund of refunds.data) {
      const micros = centsToMicros(refund.amount);
      if (refund.status === 'failed' || refund.status === 'canceled' || micros === null) continue;
      const result = await postPayment(this.db, {
        tenantId,
        processor: this.name,
        eventId: refund.id,
        kind: 'refund',
        amountMicros: -micros,
        description: 'Refund (Stripe)',
      });
      applied ||= result.applied;
      // A refund listed as still settling may have failed since, and its `refund.failed` been told
      // before this debit landed (finding none, it gave nothing back): asked again now that the
      // debit is in, a failed one is given back here (once, whichever of the two gets there).
      if (refund.status === 'pending' || refund.status === 'requires_action') {
        const now = await this.askOrNone(() => this.stripe.refunds.retrieve(refund.id));
        if (now && (await this.refundUndone(now))) applied = true;
      }
    }
    return applied;
  }

  /**
   * A refund that failed or was canceled after its debit (a refund debits as soon as Stripe
   * reports it, pending included): the debit is given back, once. One never debited posts nothing.
   */
  private async refundUndone(refund: Stripe.Refund): Promise<boolean> {
    if (refund.status !== 'failed' && refund.status !== 'canceled') return false;
    const debit = await this.db
      .selectFrom('ledger_entries')
      .select(['tenant_id', 'amount_micros'])
      .where('idempotency_key', '=', paymentKey(this.name, refund.id))
      .executeTakeFirst();
    if (!debit) return false;
    const result = await postPayment(this.db, {
      tenantId: debit.tenant_id,
      processor: this.name,
      eventId: `${refund.id}:undone`,
      kind: 'adjustment',
      amountMicros: -Number(debit.amount_micros),
      description: `Refund ${refund.status} (Stripe)`,
    });
    return result.applied;
  }

  private async disputed(dispute: Stripe.Dispute): Promise<boolean> {
    const chargeId = idOf(dispute.charge);
    const micros = centsToMicros(dispute.amount);
    if (!chargeId || micros === null) return false;
    const charge = await this.askOrNone(() => this.stripe.charges.retrieve(chargeId));
    if (!charge) return false;
    const tenantId = await this.tenantOfCustomer(idOf(charge.customer));
    if (!tenantId) return false;
    const result = await postPayment(this.db, {
      tenantId,
      processor: this.name,
      eventId: dispute.id,
      kind: 'adjustment',
      amountMicros: -micros,
      description: 'Disputed payment (Stripe)',
    });
    return result.applied;
  }

  private async tenantOfCustomer(customerId: string | null): Promise<string | null> {
    if (!customerId) return null;
    const row = await this.db
      .selectFrom('stripe_customers')
      .select('tenant_id')
      .where('customer_id', '=', customerId)
      .executeTakeFirst();
    return row?.tenant_id ?? null;
  }
}

/**
 * A positive whole number of cents as micros, or null for anything else, an amount too large to
 * count in micros included: such an event posts nothing rather than failing every retry.
 */
function centsToMicros(cents: unknown): number | null {
  if (typeof cents !== 'number' || !Number.isSafeInteger(cents) || cents <= 0) return null;
  const micros = cents * MICROS_PER_CENT;
  return Number.isSafeInteger(micros) ? micros : null;
}

/** The id of a Stripe reference, whether Stripe sent it as an id or as the expanded object. */
function idOf(ref: string | { id: string } | null | undefined): string | null {
  if (!ref) return null;
  return typeof ref === 'string' ? ref : ref.id;
}
