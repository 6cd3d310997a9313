/**
 * The Stripe processor over real HTTP (on PGlite, and Postgres when `DATABASE_URL` is set): the
 * real `stripe` client talks to a local stand-in of the Stripe API (no network), and webhooks are
 * signed with the library's own test header helper. A completed checkout credits exactly once
 * under duplicate, concurrent and out-of-order delivery; refunds and disputes debit once; a bad
 * signature is refused with 400.
 *
 * @see docs/api/payments.md
 */
import fc from 'fast-check';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import type { MembershipRole } from '../src/store/database.js';
import { type RunningPlatform, signedInOwner, signedInTeammate, startPlatform } from './support/platform.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';
import { type StripeStandIn, startStripeStandIn } from './support/stripe-stand-in.js';

const WEBHOOK_SECRET = 'whsec_test_stand_in';
const USD = 1_000_000;
/** The library, used here only for its webhook signing helper. */
const signer = new Stripe('sk_test_unused');

for (const kind of STORE_KINDS) {
  describe(`payments, Stripe processor (${kind})`, () => {
    let store: TestStore;
    let stripeApi: StripeStandIn;
    let server: RunningPlatform;
    let emails = 0;
    let events = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      stripeApi = await startStripeStandIn();
      server = await startPlatform(store, {
        stripe: { secretKey: 'sk_test_stand_in', webhookSecret: WEBHOOK_SECRET, api: stripeApi.api },
      });
    });
    afterAll(async () => {
      await server?.close();
      await stripeApi?.close();
      await store?.dispose();
    });

    const owner = () => signedInOwner(server, `stripe-${++emails}-${kind}@example.test`);
    const balanceOf = async (tenantId: string) =>
      (
        await store.db
          .selectFrom('wallets')
          .select('balance_micros')
          .where('tenant_id', '=', tenantId)
          .executeTakeFirst()
      )?.balance_micros ?? 0;
    const ledgerOf = (tenantId: string) =>
      store.db
        .selectFrom('ledger_entries')
        .select(['kind', 'amount_micros', 'idempotency_key'])
        .where('tenant_id', '=', tenantId)
        .orderBy('id')
        .execute();

    /** Buys through the API; answers the Checkout Session the platform created. */
    const purchase = async (cookie: string, body: unknown) => {
      const response = await fetch(`${server.url}/api/billing/purchase`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      const { url } = (await response.json()) as { url: string };
      const sessionId = url.split('/').pop()!;
      const created = stripeApi.requests.findLast((r) => r.path === '/v1/checkout/sessions')!;
      return { url, sessionId, form: created.form };
    };
    const event = (type: string, object: Record<string, unknown>) => ({
      id: `evt_${++events}`,
      object: 'event',
      type,
      api_version: '2025-10-29.clover',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      data: { object },
    });
    const completedEvent = (
      sessionId: string,
      form: Record<string, string>,
      paymentIntent: string | null,
      paymentStatus = 'paid',
    ) =>
      event('checkout.session.completed', {
        id: sessionId,
        object: 'checkout.session',
        customer: form.customer,
        payment_intent: paymentIntent,
        payment_status: paymentStatus,
        status: 'complete',
        amount_total: Number(form['line_items[0][price_data][unit_amount]']),
        currency: 'usd',
        metadata: { tenantId: form['metadata[tenantId]'], purchaseId: form['metadata[purchaseId]'] },
      });
    /** Makes the stand-in know a paid charge of the customer, and answers it. */
    const charge = (customer: string, amountCents: number, paymentIntent: string) => {
      const id = `ch_${++events}`;
      const object = {
        id,
        object: 'charge',
        customer,
        amount: amountCents,
        amount_refunded: 0,
        payment_intent: paymentIntent,
        paid: true,
      };
      stripeApi.charges.set(id, object);
      return object;
    };
    const refund = (chargeObject: { id: string; amount_refunded: number }, amountCents: number) => {
      const id = `re_${++events}`;
      stripeApi.refunds.push({
        id,
        object: 'refund',
        charge: chargeObject.id,
        amount: amountCents,
        status: 'succeeded',
      });
      chargeObject.amount_refunded += amountCents;
      return event('charge.refunded', { ...chargeObject, refunded: true });
    };
    /** A user of the workspace with the role, signed in: answers the session cookie. */
    const teammate = (tenantId: string, role: MembershipRole) =>
      signedInTeammate(server, tenantId, role, `${role}-${++emails}-${kind}@example.test`);
    const deliver = (payload: unknown, signature?: string) => {
      const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
      return fetch(`${server.url}/api/billing/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'stripe-signature':
            signature ?? signer.webhooks.generateTestHeaderString({ payload: body, secret: WEBHOOK_SECRET }),
        },
        body,
      });
    };

    it('a purchase creates the workspace customer once and a Checkout Session carrying the purchase', async () => {
      const buyer = await owner();
      const first = await purchase(buyer.cookie, { pack: 25 });
      const second = await purchase(buyer.cookie, { amountUsd: 12.5 });
      expect(first.url).toBe(`http://127.0.0.1:${stripeApi.api.port}/pay/${first.sessionId}`);
      expect(first.form).toMatchObject({
        mode: 'payment',
        'line_items[0][price_data][currency]': 'usd',
        'line_items[0][price_data][unit_amount]': '2500',
        'metadata[tenantId]': buyer.tenantId,
        'payment_intent_data[metadata][tenantId]': buyer.tenantId,
        success_url: `${server.platform.context.baseUrl}/billing`,
      });
      expect(first.form['metadata[purchaseId]']).toBe(
        first.form['payment_intent_data[metadata][purchaseId]'],
      );
      expect(second.form['line_items[0][price_data][unit_amount]']).toBe('1250');
      expect(second.form.customer).toBe(first.form.customer);
      const customers = await store.db
        .selectFrom('stripe_customers')
        .select('customer_id')
        .where('tenant_id', '=', buyer.tenantId)
        .execute();
      expect(customers).toEqual([{ customer_id: first.form.customer }]);
      // Starting a purchase moves no money.
      expect(await balanceOf(buyer.tenantId)).toBe(0);
    });

    it("the billing page's forms reach Stripe through a page, since its CSP keeps form redirects on the platform", async () => {
      const buyer = await owner();
      const page = await (await fetch(`${server.url}/billing`, { headers: { cookie: buyer.cookie } })).text();
      const form = (path: string, fields: Record<string, string>) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: {
            cookie: buyer.cookie,
            origin: server.url,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams(fields).toString(),
        });
      const stripeOrigin = `http://127.0.0.1:${stripeApi.api.port}`;
      const pack = await form('/billing/purchase', {
        pack: '25',
        csrf_token: /name="csrf_token" value="([^"]+)"/.exec(page)![1]!,
      });
      expect(pack.status).toBe(200);
      expect(pack.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await pack.text()).toMatch(new RegExp(`content="0;url=${stripeOrigin}/pay/[^"]+"`));
      const portal = await form('/billing', {
        _csrf: /name="_csrf" value="([^"]+)"/.exec(page)![1]!,
        _action: 'portal',
      });
      expect(portal.status).toBe(200);
      expect(await portal.text()).toContain(`id="continue" href="${stripeOrigin}/`);
    });

    it('the customer snapshot: none before a purchase, then the customer and its saved card; owners only', async () => {
      const buyer = await owner();
      const snapshot = () =>
        fetch(`${server.url}/api/billing/customer`, { headers: { cookie: buyer.cookie } }).then(async (r) => {
          expect(r.status).toBe(200);
          expect(r.headers.get('cache-control')).toBe('no-store');
          return r.json();
        });
      const asked = stripeApi.requests.length;
      expect(await snapshot()).toEqual({
        processor: 'stripe',
        customerId: null,
        card: null,
        autoReload: null,
      });
      expect(stripeApi.requests.length).toBe(asked);
      const { form } = await purchase(buyer.cookie, { pack: 5 });
      expect(await snapshot()).toEqual({
        processor: 'stripe',
        customerId: form.customer,
        card: null,
        autoReload: null,
      });
      stripeApi.cards.set(form.customer!, { brand: 'visa', last4: '4242' });
      expect(await snapshot()).toEqual({
        processor: 'stripe',
        customerId: form.customer,
        card: { brand: 'visa', last4: '4242' },
        autoReload: null,
      });
      expect((await fetch(`${server.url}/api/billing/customer`)).status).toBe(401);
      const viewer = await teammate(buyer.tenantId, 'viewer');
      const refused = await fetch(`${server.url}/api/billing/customer`, { headers: { cookie: viewer } });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual({
        message: 'Forbidden: only workspace owners see and change billing',
        code: 'FORBIDDEN',
      });
    });

    it('a setup intent and a portal session, for the one customer of the workspace; owners only', async () => {
      const buyer = await owner();
      const post = (cookie: string, path: string, body: unknown = {}) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const setup = await post(buyer.cookie, '/api/billing/setup-intent');
      expect(setup.status).toBe(200);
      expect(setup.headers.get('cache-control')).toBe('no-store');
      const intent = (await setup.json()) as {
        setupIntentId: string;
        clientSecret: string;
        customerId: string;
      };
      expect(intent.clientSecret).toBe(`${intent.setupIntentId}_secret_standin`);
      expect(stripeApi.requests.findLast((r) => r.path === '/v1/setup_intents')!.form).toMatchObject({
        customer: intent.customerId,
        usage: 'off_session',
        'metadata[tenantId]': buyer.tenantId,
      });
      const portal = await post(buyer.cookie, '/api/billing/portal');
      expect(portal.status).toBe(200);
      const { url } = (await portal.json()) as { url: string };
      expect(url.startsWith(`http://127.0.0.1:${stripeApi.api.port}/portal/bps_`)).toBe(true);
      expect(stripeApi.requests.findLast((r) => r.path === '/v1/billing_portal/sessions')!.form).toEqual({
        customer: intent.customerId,
        return_url: `${server.platform.context.baseUrl}/billing`,
      });
      // One customer for both; unknown fields are refused before Stripe is asked; members may not.
      expect(
        stripeApi.requests.filter(
          (r) => r.path === '/v1/customers' && r.form['metadata[tenantId]'] === buyer.tenantId,
        ),
      ).toHaveLength(1);
      const asked = stripeApi.requests.length;
      const bad = await post(buyer.cookie, '/api/billing/portal', { returnUrl: 'https://elsewhere.example' });
      expect(bad.status).toBe(400);
      const member = await teammate(buyer.tenantId, 'member');
      expect((await post(member, '/api/billing/setup-intent')).status).toBe(403);
      expect((await post(member, '/api/billing/portal')).status).toBe(403);
      expect(stripeApi.requests.length).toBe(asked);
    });

    it('a manual top-up charges the saved card off-session and credits once from the webhook', async () => {
      const buyer = await owner();
      const reload = (cookie: string, body: unknown) =>
        fetch(`${server.url}/api/billing/reload`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const noCard = await reload(buyer.cookie, { pack: 25 });
      expect(noCard.status).toBe(409);
      expect(await noCard.json()).toEqual({
        message: 'No card is saved: save one with a setup intent first',
        code: 'NO_SAVED_CARD',
      });
      const { form } = await purchase(buyer.cookie, { pack: 5 });
      stripeApi.cards.set(form.customer!, { brand: 'visa', last4: '4242' });
      const started = await reload(buyer.cookie, { pack: 25 });
      expect(started.status).toBe(200);
      const body = (await started.json()) as { purchaseId: string; paymentIntentId: string; status: string };
      expect(body.status).toBe('succeeded');
      expect(stripeApi.requests.findLast((r) => r.path === '/v1/payment_intents')!.form).toMatchObject({
        amount: '2500',
        currency: 'usd',
        customer: form.customer,
        off_session: 'true',
        confirm: 'true',
        'metadata[purchaseId]': body.purchaseId,
      });
      // The charge alone moves no credit: the webhook does, once.
      expect(await balanceOf(buyer.tenantId)).toBe(0);
      const succeeded = event('payment_intent.succeeded', {
        id: body.paymentIntentId,
        object: 'payment_intent',
        amount: 2500,
        status: 'succeeded',
        metadata: { tenantId: buyer.tenantId, purchaseId: body.purchaseId },
      });
      expect(await (await deliver(succeeded)).json()).toMatchObject({ applied: true });
      expect(await (await deliver(succeeded)).json()).toMatchObject({ applied: false });
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);

      stripeApi.cards.set(form.customer!, { brand: 'visa', last4: '0002' });
      const declined = await reload(buyer.cookie, { amountUsd: 10 });
      expect(declined.status).toBe(402);
      expect(await declined.json()).toEqual({
        message: 'The saved card was declined: Your card was declined.',
        code: 'CARD_DECLINED',
      });
      // A retried top-up (the same Idempotency-Key) charges once: at once, and again after.
      stripeApi.cards.set(form.customer!, { brand: 'visa', last4: '4242' });
      const charged = () => stripeApi.requests.filter((r) => r.path === '/v1/payment_intents').length;
      const before = charged();
      const keyed = () =>
        fetch(`${server.url}/api/billing/reload`, {
          method: 'POST',
          headers: {
            cookie: buyer.cookie,
            'content-type': 'application/json',
            'idempotency-key': 'top-up-1',
          },
          body: JSON.stringify({ pack: 5 }),
        });
      const together = await Promise.all([keyed(), keyed()]);
      expect(together.map((r) => r.status).sort()).toEqual(
        together.some((r) => r.status === 409) ? [200, 409] : [200, 200],
      );
      const retried = await keyed();
      expect(retried.status).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      const first = await together.find((r) => r.status === 200)!.json();
      expect((await retried.json()).purchaseId).toBe(first.purchaseId);
      expect(charged() - before).toBe(1);
      // A top-up whose charge was made but whose answer was lost (Stripe's client tried three
      // times): the 503's retry asks Stripe for the same charge, and the card is charged once.
      const intents = stripeApi.paymentIntents.length;
      stripeApi.loseAnswers('/v1/payment_intents', 3);
      const lostAnswer = (key: string) =>
        fetch(`${server.url}/api/billing/reload`, {
          method: 'POST',
          headers: { cookie: buyer.cookie, 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ pack: 5 }),
        });
      const unanswered = await lostAnswer('top-up-2');
      expect(unanswered.status).toBe(503);
      const again = await lostAnswer('top-up-2');
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      const charge = (await again.json()) as { paymentIntentId: string };
      expect(stripeApi.paymentIntents.length - intents).toBe(1);
      expect(charge.paymentIntentId).toBe(stripeApi.paymentIntents.at(-1)!.id);
      const member = await teammate(buyer.tenantId, 'member');
      expect((await reload(member, { pack: 5 })).status).toBe(403);
      expect((await reload(buyer.cookie, { pack: 7 })).status).toBe(400);
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);
    });

    it('a checkout reports its payment twice (completion and payment intent): one credit', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 5 });
      const metadata = { tenantId: buyer.tenantId, purchaseId: form['metadata[purchaseId]'] };
      const succeeded = event('payment_intent.succeeded', {
        id: 'pi_both',
        object: 'payment_intent',
        metadata,
      });
      expect(await (await deliver(succeeded)).json()).toMatchObject({ applied: true });
      expect(await (await deliver(completedEvent(sessionId, form, 'pi_both'))).json()).toMatchObject({
        applied: false,
      });
      expect(await ledgerOf(buyer.tenantId)).toEqual([
        {
          kind: 'purchase',
          amount_micros: 5 * USD,
          idempotency_key: `payment:stripe:${form['metadata[purchaseId]']}`,
        },
      ]);
    });

    it('one purchase credits once, whichever events report it and under whatever payment ids', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 25 });
      const metadata = { tenantId: buyer.tenantId, purchaseId: form['metadata[purchaseId]'] };
      const answers = [];
      for (const delivery of [
        completedEvent(sessionId, form, 'pi_one'),
        event('payment_intent.succeeded', { id: 'pi_two', object: 'payment_intent', metadata }),
        completedEvent(sessionId, form, null),
      ]) {
        answers.push((await (await deliver(delivery)).json()).applied);
      }
      expect(answers).toEqual([true, false, false]);
      // Told at once, under three ids, it still credits once.
      const racer = await owner();
      const raced = await purchase(racer.cookie, { pack: 5 });
      const racedMeta = { tenantId: racer.tenantId, purchaseId: raced.form['metadata[purchaseId]'] };
      await Promise.all([
        deliver(completedEvent(raced.sessionId, raced.form, 'pi_r1')),
        deliver(
          event('payment_intent.succeeded', { id: 'pi_r2', object: 'payment_intent', metadata: racedMeta }),
        ),
        deliver(completedEvent(raced.sessionId, raced.form, null)),
      ]);
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);
      expect(await balanceOf(racer.tenantId)).toBe(5 * USD);
      expect(await ledgerOf(racer.tenantId)).toHaveLength(1);
    });

    it('a signed event of an unexpected shape, or about a charge Stripe does not know, posts nothing', async () => {
      const buyer = await owner();
      const { form } = await purchase(buyer.cookie, { pack: 5 });
      const deliveries = [
        { ...event('checkout.session.completed', {}), data: {} },
        { ...event('payment_intent.succeeded', {}), data: { object: null } },
        event('charge.refunded', { id: 'ch_unknown', object: 'charge', customer: form.customer }),
        event('charge.dispute.created', { id: 'dp_x', object: 'dispute', charge: 'ch_unknown', amount: 500 }),
        event('charge.dispute.created', { id: 'dp_y', object: 'dispute', charge: 'ch_unknown' }),
      ];
      for (const delivery of deliveries) {
        const response = await deliver(delivery);
        expect(response.status, delivery.type).toBe(200);
        expect(await response.json()).toMatchObject({ received: true, applied: false });
      }
      // Signed JSON that is no event, and a dispute of a real charge for more cents than micros
      // can count: posted nothing, answered 200 so Stripe does not retry them for days.
      const paid = charge(form.customer!, 500, 'pi_huge');
      const huge = event('charge.dispute.created', {
        id: 'dp_huge',
        object: 'dispute',
        charge: paid.id,
        amount: 1e15,
      });
      for (const body of ['null', '5', JSON.stringify(huge)]) {
        const response = await deliver(body);
        expect(response.status, body).toBe(200);
        expect(await response.json()).toMatchObject({ received: true, applied: false });
      }
      // A signed body that is no JSON is said to be that, not a bad signature.
      const notJson = await deliver('{"id": ');
      expect(notJson.status).toBe(400);
      expect(await notJson.json()).toEqual({
        message: 'The webhook body is signed but is not JSON',
        code: 'INVALID_REQUEST',
      });
      expect(await balanceOf(buyer.tenantId)).toBe(0);
    });

    it('auto-reload: a posting below the threshold charges the saved card, one in flight at a time', async () => {
      const buyer = await owner();
      const patch = (cookie: string, body: unknown) =>
        fetch(`${server.url}/api/billing/customer`, {
          method: 'PATCH',
          headers: { cookie, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 25 });
      await deliver(completedEvent(sessionId, form, `pi_auto_${kind}`));
      stripeApi.cards.set(form.customer!, { brand: 'visa', last4: '4242' });
      const set = await patch(buyer.cookie, { autoReload: { thresholdUsd: 10, pack: 25 } });
      expect(set.status).toBe(200);
      expect(await set.json()).toMatchObject({
        autoReload: { thresholdMicros: 10 * USD, amountMicros: 25 * USD },
      });
      for (const bad of [
        { autoReload: { thresholdUsd: 0.5, pack: 25 } },
        { autoReload: { thresholdUsd: 10, pack: 7 } },
        {},
      ]) {
        expect((await patch(buyer.cookie, bad)).status, JSON.stringify(bad)).toBe(400);
      }
      expect((await patch(await teammate(buyer.tenantId, 'member'), { autoReload: null })).status).toBe(403);

      const reloads = () =>
        stripeApi.requests.filter(
          (r) => r.path === '/v1/payment_intents' && r.form['metadata[tenantId]'] === buyer.tenantId,
        );
      const use = (usd: number) =>
        post(store.db, {
          tenantId: buyer.tenantId,
          kind: 'usage',
          amountMicros: -usd * USD,
          idempotencyKey: `usage-${++events}`,
        });
      await use(10);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(reloads()).toHaveLength(0); // 15 left: above the threshold
      await use(8);
      await expect.poll(() => reloads().length, { timeout: 5000 }).toBe(1);
      expect(reloads()[0]!.form).toMatchObject({ amount: '2500', off_session: 'true' });
      // Still below while the first is in flight: no second charge.
      await use(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(reloads()).toHaveLength(1);
      // Its credit lands; the next fall below starts another.
      const first = reloads()[0]!.form;
      await deliver(
        event('payment_intent.succeeded', {
          id: `pi_auto_credit_${kind}`,
          object: 'payment_intent',
          metadata: { tenantId: first['metadata[tenantId]'], purchaseId: first['metadata[purchaseId]'] },
        }),
      );
      expect(await balanceOf(buyer.tenantId)).toBe(31 * USD);
      await use(25);
      await expect.poll(() => reloads().length, { timeout: 5000 }).toBe(2);
      // Turned off: no more.
      expect(await (await patch(buyer.cookie, { autoReload: null })).json()).toMatchObject({
        autoReload: null,
      });
      await deliver(
        event('payment_intent.succeeded', {
          id: `pi_auto_credit2_${kind}`,
          object: 'payment_intent',
          metadata: { tenantId: buyer.tenantId, purchaseId: reloads()[1]!.form['metadata[purchaseId]'] },
        }),
      );
      await use(30);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(reloads()).toHaveLength(2);
    });

    it('a completed checkout credits once: delivered twice, then ten times at once, under new event ids', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 5 });
      const first = await deliver(completedEvent(sessionId, form, 'pi_dup'));
      expect(first.status).toBe(200);
      expect(await first.json()).toEqual({
        received: true,
        type: 'checkout.session.completed',
        applied: true,
      });
      const replay = await deliver(completedEvent(sessionId, form, 'pi_dup'));
      expect(await replay.json()).toMatchObject({ applied: false });
      const raced = await Promise.all(
        Array.from({ length: 10 }, () => deliver(completedEvent(sessionId, form, 'pi_dup'))),
      );
      expect(raced.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(await balanceOf(buyer.tenantId)).toBe(5 * USD);
      expect(await ledgerOf(buyer.tenantId)).toEqual([
        {
          kind: 'purchase',
          amount_micros: 5 * USD,
          idempotency_key: `payment:stripe:${form['metadata[purchaseId]']}`,
        },
      ]);
      const row = await store.db
        .selectFrom('purchases')
        .select(['completed_at', 'ledger_entry_id'])
        .where('id', '=', form['metadata[purchaseId]']!)
        .executeTakeFirstOrThrow();
      expect(row.completed_at).not.toBeNull();
      expect(row.ledger_entry_id).not.toBeNull();
    });

    it('an unpaid completion, another tenant named in the metadata, or an unknown event credit nothing', async () => {
      const buyer = await owner();
      const other = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 5 });
      const unpaid = await deliver(completedEvent(sessionId, form, 'pi_unpaid', 'unpaid'));
      expect(await unpaid.json()).toMatchObject({ applied: false });
      const forged = await deliver(
        completedEvent(sessionId, { ...form, 'metadata[tenantId]': other.tenantId }, 'pi_forged'),
      );
      expect(await forged.json()).toMatchObject({ applied: false });
      const unknown = await deliver(event('customer.created', { id: 'cus_x', object: 'customer' }));
      expect(await unknown.json()).toEqual({ received: true, type: 'customer.created', applied: false });
      expect(await balanceOf(buyer.tenantId)).toBe(0);
      expect(await balanceOf(other.tenantId)).toBe(0);
    });

    it('a bad signature is 400 and posts nothing', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 5 });
      const payload = JSON.stringify(completedEvent(sessionId, form, 'pi_forged_sig'));
      const signedByOther = signer.webhooks.generateTestHeaderString({ payload, secret: 'whsec_other' });
      const signedOther = signer.webhooks.generateTestHeaderString({
        payload: `${payload} `,
        secret: WEBHOOK_SECRET,
      });
      const stale = signer.webhooks.generateTestHeaderString({
        payload,
        secret: WEBHOOK_SECRET,
        timestamp: Math.floor(Date.now() / 1000) - 3600,
      });
      for (const signature of [signedByOther, signedOther, stale, 'garbage', '']) {
        const response = await deliver(payload, signature);
        expect(response.status, signature).toBe(400);
        expect(await response.json()).toEqual({
          message: 'The Stripe-Signature header does not match the body',
          code: 'INVALID_SIGNATURE',
        });
      }
      const tooLarge = await deliver('x'.repeat(300 * 1024));
      expect(tooLarge.status).toBe(413);
      expect(await balanceOf(buyer.tenantId)).toBe(0);
    });

    it('whatever a webhook body and signature hold, an unsigned delivery is 400 (or 413), never a 5xx', async () => {
      const asked = stripeApi.requests.length;
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.string({ maxLength: 300 }), fc.json(), fc.constantFrom('', '{', '\u0000', '[]')),
          fc.oneof(
            fc.string({ maxLength: 100 }),
            fc.constantFrom('t=1,v1=00', 't=,v1=', `t=${Math.floor(Date.now() / 1000)},v1=${'a'.repeat(64)}`),
          ),
          async (body, signature) => {
            const response = await deliver(body, signature);
            expect(response.status).toBe(400);
            expect(await response.json()).toMatchObject({ code: 'INVALID_SIGNATURE' });
          },
        ),
        { numRuns: 60 },
      );
      expect(stripeApi.requests.length).toBe(asked);
    });

    it('refunds debit once each: a replay posts nothing, a later partial refund posts only itself', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 25 });
      await deliver(completedEvent(sessionId, form, 'pi_refund'));
      const paid = charge(form.customer!, 2500, 'pi_refund');
      const firstRefund = refund(paid, 1000);
      expect(await (await deliver(firstRefund)).json()).toMatchObject({
        type: 'charge.refunded',
        applied: true,
      });
      expect(await (await deliver(firstRefund)).json()).toMatchObject({ applied: false });
      await deliver(refund(paid, 500));
      expect(await balanceOf(buyer.tenantId)).toBe(10 * USD);
      expect((await ledgerOf(buyer.tenantId)).map((e) => [e.kind, e.amount_micros])).toEqual([
        ['purchase', 25 * USD],
        ['refund', -10 * USD],
        ['refund', -5 * USD],
      ]);
    });

    /** A workspace that bought 25 USD, whose charge's event reports a pending refund of 10. */
    const pendingRefund = async (paymentIntent: string) => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 25 });
      await deliver(completedEvent(sessionId, form, paymentIntent));
      const reported = refund(charge(form.customer!, 2500, paymentIntent), 1000);
      const pending = stripeApi.refunds.at(-1)!;
      pending.status = 'pending';
      return { buyer, reported, pending };
    };

    it('a refund that fails or is canceled after its debit is credited back, once', async () => {
      const { buyer, reported, pending } = await pendingRefund('pi_undo');
      expect(await (await deliver(reported)).json()).toMatchObject({ applied: true });
      expect(await balanceOf(buyer.tenantId)).toBe(15 * USD);
      const failed = event('refund.failed', { ...pending, status: 'failed' });
      expect(await (await deliver(failed)).json()).toMatchObject({ type: 'refund.failed', applied: true });
      // Told again, under the other event names Stripe uses for it: nothing more.
      for (const type of ['refund.updated', 'charge.refund.updated']) {
        expect(await (await deliver(event(type, { ...pending, status: 'failed' }))).json()).toMatchObject({
          applied: false,
        });
      }
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);
      // A refund that never debited (failed before its charge's event) gives nothing back.
      const never = event('refund.updated', {
        id: 're_never',
        object: 'refund',
        status: 'canceled',
        amount: 500,
      });
      expect(await (await deliver(never)).json()).toMatchObject({ applied: false });
      // Nor does one that succeeded.
      expect(
        await (await deliver(event('refund.updated', { ...pending, status: 'succeeded' }))).json(),
      ).toMatchObject({ applied: false });
      expect((await ledgerOf(buyer.tenantId)).map((e) => [e.kind, e.amount_micros])).toEqual([
        ['purchase', 25 * USD],
        ['refund', -10 * USD],
        ['adjustment', 10 * USD],
      ]);
    });

    it('a refund that fails while its charge’s event is handled is given back, though its failure was told first', async () => {
      const { buyer, reported, pending: settling } = await pendingRefund('pi_race');
      // The charge's refunds are listed as pending; then the refund fails at Stripe, and its
      // refund.failed is handled before the charge's event has posted the debit: nothing to undo yet.
      stripeApi.beforeRefundsListAnswer = async () => {
        stripeApi.beforeRefundsListAnswer = undefined;
        settling.status = 'failed';
        const failed = event('refund.failed', { ...settling });
        expect(await (await deliver(failed)).json()).toMatchObject({ applied: false });
      };
      expect(await (await deliver(reported)).json()).toMatchObject({ applied: true });
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);
      expect((await ledgerOf(buyer.tenantId)).map((e) => [e.kind, e.amount_micros])).toEqual([
        ['purchase', 25 * USD],
        ['refund', -10 * USD],
        ['adjustment', 10 * USD],
      ]);
      // Told again, the charge's event and the failure post nothing more.
      expect(await (await deliver(reported)).json()).toMatchObject({ applied: false });
      expect(await (await deliver(event('refund.failed', { ...settling }))).json()).toMatchObject({
        applied: false,
      });
      expect(await balanceOf(buyer.tenantId)).toBe(25 * USD);
    });

    it('out of order, a refund before its completion debits first and the credit lands after: the same total', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 100 });
      const paid = charge(form.customer!, 10_000, 'pi_early');
      const refunded = refund(paid, 10_000);
      await deliver(refunded);
      expect(await balanceOf(buyer.tenantId)).toBe(-100 * USD);
      await deliver(completedEvent(sessionId, form, 'pi_early'));
      await deliver(refunded);
      await deliver(completedEvent(sessionId, form, 'pi_early'));
      expect(await balanceOf(buyer.tenantId)).toBe(0);
      expect((await ledgerOf(buyer.tenantId)).map((e) => e.kind)).toEqual(['refund', 'purchase']);
    });

    it('a dispute debits its amount once as an adjustment', async () => {
      const buyer = await owner();
      const { sessionId, form } = await purchase(buyer.cookie, { pack: 25 });
      await deliver(completedEvent(sessionId, form, 'pi_dispute'));
      const paid = charge(form.customer!, 2500, 'pi_dispute');
      const dispute = event('charge.dispute.created', {
        id: `dp_${++events}`,
        object: 'dispute',
        charge: paid.id,
        payment_intent: 'pi_dispute',
        amount: 2500,
        status: 'needs_response',
      });
      expect(await (await deliver(dispute)).json()).toMatchObject({ applied: true });
      expect(await (await deliver(dispute)).json()).toMatchObject({ applied: false });
      expect(await balanceOf(buyer.tenantId)).toBe(0);
      expect((await ledgerOf(buyer.tenantId)).map((e) => [e.kind, e.amount_micros])).toEqual([
        ['purchase', 25 * USD],
        ['adjustment', -25 * USD],
      ]);
    });
  });
}

describe('payments, Stripe not answering', () => {
  it('answers 503 PAYMENTS_UNAVAILABLE and records no customer', async () => {
    const store = await openTestStore('pglite');
    const gone = await startStripeStandIn();
    const api = gone.api;
    await gone.close();
    const server = await startPlatform(store, {
      stripe: { secretKey: 'sk_test_stand_in', webhookSecret: WEBHOOK_SECRET, api },
    });
    try {
      const buyer = await signedInOwner(server, 'stripe-away@example.test');
      const response = await fetch(`${server.url}/api/billing/purchase`, {
        method: 'POST',
        headers: { cookie: buyer.cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ pack: 5 }),
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        message: 'Stripe is not answering; try again shortly',
        code: 'PAYMENTS_UNAVAILABLE',
      });
      expect(await store.db.selectFrom('stripe_customers').selectAll().execute()).toEqual([]);

      // In a browser: the billing page says Stripe is away (for a workspace with a customer, whose
      // card it would show), and its pack form answers a page.
      await store.db
        .insertInto('stripe_customers')
        .values({ tenant_id: buyer.tenantId, customer_id: 'cus_away' })
        .execute();
      const billing = await (
        await fetch(`${server.url}/billing`, { headers: { cookie: buyer.cookie } })
      ).text();
      expect(billing).toContain('The payment processor is not answering');
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(billing)?.[1];
      expect(csrf).toBeDefined();
      const posted = await fetch(`${server.url}/billing/purchase`, {
        method: 'POST',
        headers: {
          cookie: buyer.cookie,
          origin: server.url,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ csrf_token: csrf!, pack: '5' }),
        redirect: 'manual',
      });
      expect(posted.status).toBe(503);
      expect(posted.headers.get('content-type')).toMatch(/^text\/html/);
      const text = await posted.text();
      expect(text).toContain('Stripe is not answering; try again shortly');
      expect(text).toContain('Back to billing');
      await store.db.deleteFrom('stripe_customers').execute();
    } finally {
      await server.close();
      await store.dispose();
    }
  });
});

describe('payments, no Stripe configured', () => {
  it('has no webhook route, no customer, no setup intent, no portal and no top-up', async () => {
    const store = await openTestStore('pglite');
    const server = await startPlatform(store);
    try {
      const response = await fetch(`${server.url}/api/billing/webhook`, { method: 'POST', body: '{}' });
      expect(response.status).toBe(404);
      const buyer = await signedInOwner(server, 'no-stripe@example.test');
      const customer = await fetch(`${server.url}/api/billing/customer`, {
        headers: { cookie: buyer.cookie },
      });
      expect(customer.status).toBe(404);
      expect(await customer.json()).toEqual({
        message: 'No payment processor with customers is configured',
        code: 'NOT_FOUND',
      });
      for (const path of ['/api/billing/setup-intent', '/api/billing/portal', '/api/billing/reload']) {
        const response = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { cookie: buyer.cookie, 'content-type': 'application/json' },
          body: path.endsWith('reload') ? '{"pack":5}' : '{}',
        });
        expect(response.status, path).toBe(404);
      }
    } finally {
      await server.close();
      await store.dispose();
    }
  });
});
