import { type Context, Hono } from 'hono';
import { z } from 'zod';
import {
  CREDIT_PACKS_USD,
  MAX_PURCHASE_USD,
  MIN_PURCHASE_USD,
  purchaseMicros,
} from '../../billing/payments/processor.js';
import { BodyTooLargeError, readBody } from '../../http/body.js';
import { NO_STORE } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { withIdempotency } from '../internal/idempotency.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import {
  requireBillingOwner,
  requireSafeCookieWrite,
  requireSession,
  type SessionCaller,
} from '../internal/session.js';

/** A credit pack; a refusal names the field and the packs. */
const packSchema = z.literal(CREDIT_PACKS_USD, {
  error: `must be one of ${CREDIT_PACKS_USD.join(', ')} (USD)`,
});

/** An amount of USD a purchase can be; a refusal names the bounds. */
const usdSchema = z
  .number({ error: 'must be a number of USD' })
  .refine((usd) => purchaseMicros(usd) !== null, {
    message: `must be from ${MIN_PURCHASE_USD} to ${MAX_PURCHASE_USD} USD in whole cents`,
  });

/** One object with either field, so a refusal names the field at fault (a union names none). */
const purchaseSchema = z
  .strictObject({ pack: packSchema.optional(), amountUsd: usdSchema.optional() })
  .refine((body) => (body.pack === undefined) !== (body.amountUsd === undefined), {
    message: 'give either pack or amountUsd',
  });

const customerPatchSchema = z.strictObject({
  autoReload: z.union([z.null(), z.strictObject({ thresholdUsd: usdSchema, pack: packSchema })]),
});

const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;
/** A cursor is the id of the last entry of the page before: a positive whole number. */
const CURSOR = /^[1-9]\d{0,15}$/;

/** Stripe's events are a few KiB; a body past this is not one. */
const MAX_WEBHOOK_BYTES = 256 * 1024;

/** How long a manual settle waits for this instance's unsettled calls to reach the store. */
const SETTLE_WAIT_MS = 5000;

/**
 * Adding credit and the billing history: `POST /api/billing/purchase`, `GET
 * /api/billing/transactions`, `POST /api/billing/settle`. Session cookie only, owners only
 * (members and viewers get 403); camelCase bodies; flat error bodies.
 *
 * @see docs/api/payments.md
 */
export function billingRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  noStoreOn(app, '/api/billing/*');

  const ownerOf = async (c: Context<PlatformEnv>, write: boolean): Promise<SessionCaller> => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    requireBillingOwner(user);
    if (write) requireSafeCookieWrite(ctx, c);
    return user;
  };

  app.post('/api/billing/purchase', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, purchaseSchema);
    const processor = ctx.payments;
    if (!processor) {
      throw new PlatformError(503, 'No payment processor is configured', { code: 'PAYMENTS_UNAVAILABLE' });
    }
    const usd = body.pack ?? body.amountUsd!;
    const { url } = await processor.startPurchase({
      tenantId: owner.tenantId,
      amountMicros: purchaseMicros(usd)!,
      returnUrl: `${ctx.baseUrl}/billing`,
      userId: owner.userId,
    });
    return c.json({ url }, 200, NO_STORE);
  });

  app.get('/api/billing/transactions', async (c) => {
    const owner = await ownerOf(c, false);
    const limit = pageSize(c.req.query('limit'));
    const cursor = c.req.query('cursor');
    if (cursor !== undefined && !CURSOR.test(cursor)) {
      throw new PlatformError(400, 'cursor must be the nextCursor of a page', { code: 'INVALID_REQUEST' });
    }
    await ctx.metering.settled(owner.tenantId);
    const page = await ctx.billing.transactions(owner.tenantId, {
      limit,
      ...(cursor ? { before: Number(cursor) } : {}),
    });
    return c.json(
      {
        transactions: page.transactions.map((entry) => ({
          ...entry,
          createdAt: entry.createdAt.toISOString(),
        })),
        nextCursor: page.nextCursor,
      },
      200,
      NO_STORE,
    );
  });

  app.post('/api/billing/settle', async (c) => {
    const owner = await ownerOf(c, true);
    await readJsonBody(c, z.strictObject({}));
    const settled = await ctx.metering.manualSettle(owner.tenantId, Date.now() + SETTLE_WAIT_MS);
    ctx.balances.invalidate(owner.tenantId);
    const balanceMicros = await ctx.balances.micros(owner.tenantId);
    return c.json({ ...settled, balanceMicros }, 200, NO_STORE);
  });

  // Customers, saved cards and the portal are Stripe's; with no Stripe they do not exist.
  const stripeOf = () => {
    if (!ctx.stripe) {
      throw new PlatformError(404, 'No payment processor with customers is configured', {
        code: 'NOT_FOUND',
      });
    }
    return ctx.stripe;
  };

  app.get('/api/billing/customer', async (c) => {
    const owner = await ownerOf(c, false);
    const stripe = stripeOf();
    return c.json({ processor: stripe.name, ...(await stripe.snapshot(owner.tenantId)) }, 200, NO_STORE);
  });

  app.patch('/api/billing/customer', async (c) => {
    const owner = await ownerOf(c, true);
    const { autoReload } = await readJsonBody(c, customerPatchSchema);
    const stripe = stripeOf();
    await stripe.setAutoReload(
      owner.tenantId,
      autoReload && {
        thresholdMicros: purchaseMicros(autoReload.thresholdUsd)!,
        amountMicros: purchaseMicros(autoReload.pack)!,
      },
    );
    return c.json({ processor: stripe.name, ...(await stripe.snapshot(owner.tenantId)) }, 200, NO_STORE);
  });

  app.post('/api/billing/setup-intent', async (c) => {
    const owner = await ownerOf(c, true);
    await readJsonBody(c, z.strictObject({}));
    return c.json(await stripeOf().setupIntent(owner.tenantId), 200, NO_STORE);
  });

  app.post('/api/billing/portal', async (c) => {
    const owner = await ownerOf(c, true);
    await readJsonBody(c, z.strictObject({}));
    return c.json(await stripeOf().portal(owner.tenantId, `${ctx.baseUrl}/billing`), 200, NO_STORE);
  });

  app.post('/api/billing/reload', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, purchaseSchema);
    const stripe = stripeOf();
    const usd = body.pack ?? body.amountUsd!;
    // A charge: a retry with the same Idempotency-Key (the owner's) answers the first charge, never a second.
    // A retry after a failure (the first charge's answer lost) asks Stripe for the same charge.
    return withIdempotency(ctx, c, owner, 'POST /api/billing/reload', body, async (retryKey) => {
      const started = await stripe.reload({
        tenantId: owner.tenantId,
        amountMicros: purchaseMicros(usd)!,
        returnUrl: `${ctx.baseUrl}/billing`,
        userId: owner.userId,
        retryKey,
      });
      return { status: 200, body: started };
    });
  });

  // Stripe's deliveries: no session, the signature over the raw body is the credential.
  app.post('/api/billing/webhook', async (c) => {
    c.set('errorShape', 'flat');
    const stripe = ctx.stripe;
    if (!stripe) throw new PlatformError(404, 'Not found', { code: 'NOT_FOUND' });
    let body: Uint8Array;
    try {
      body = await readBody(c.req.raw, { maxBytes: MAX_WEBHOOK_BYTES });
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      throw new PlatformError(413, 'Request body too large', { code: 'INVALID_REQUEST' });
    }
    const outcome = await stripe.receiveWebhook(body, c.req.header('stripe-signature'));
    return c.json({ received: true, ...outcome }, 200, NO_STORE);
  });

  return app;
}

function pageSize(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PAGE;
  const limit = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_PAGE)) {
    throw new PlatformError(400, `limit must be a whole number from 1 to ${MAX_PAGE}`, {
      code: 'INVALID_REQUEST',
    });
  }
  return limit;
}
