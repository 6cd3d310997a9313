/**
 * A local stand-in for the few Stripe API endpoints the Stripe processor calls, so tests run the
 * real `stripe` client with no network: customers, Checkout Sessions, a charge's refunds and a
 * charge. Answers are shaped as Stripe's (ids with their prefixes, `object`, list envelopes);
 * a repeated `Idempotency-Key` answers the first answer, as Stripe does.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StripeRequest {
  method: string;
  path: string;
  /** The form fields of a POST, bracket keys kept as sent (`metadata[tenantId]`). */
  form: Record<string, string>;
}

type StripeObject = Record<string, unknown> & { id: string };

export interface StripeStandIn {
  api: { host: string; port: number; protocol: 'http' };
  requests: StripeRequest[];
  /** Charges and refunds the tests make Stripe know (a payment, its refunds). */
  charges: Map<string, StripeObject>;
  refunds: StripeObject[];
  /** Cards saved on customers, by customer id. */
  cards: Map<string, { brand: string; last4: string }>;
  /**
   * Run when a charge's refunds are listed, after the list is read and before it is answered: what
   * happens at Stripe (a refund failing, its webhook told) while the list is on its way.
   */
  beforeRefundsListAnswer?: () => Promise<void>;
  /** Payment intents made (one per charge; an idempotent replay makes none). */
  paymentIntents: StripeObject[];
  /**
   * Loses the next `count` answers to POSTs at `path`: the request is done (a charge made, its
   * key remembered) but the connection closes before the answer, as a network failing then does.
   */
  loseAnswers(path: string, count: number): void;
  close(): Promise<void>;
}

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const requests: StripeRequest[] = [];
  const charges = new Map<string, StripeObject>();
  const refunds: StripeObject[] = [];
  const cards = new Map<string, { brand: string; last4: string }>();
  const byIdempotencyKey = new Map<string, unknown>();
  const paymentIntents: StripeObject[] = [];
  let lost = { path: '', count: 0 };
  let next = 0;
  const id = (prefix: string) => `${prefix}_standin${++next}`;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const form = Object.fromEntries(new URLSearchParams(await readAll(req)));
    requests.push({ method: req.method ?? '', path: url.pathname, form });
    const answer = (status: number, body: unknown) => {
      if (req.method === 'POST' && url.pathname === lost.path && lost.count > 0) {
        lost.count--;
        return void req.socket.destroy();
      }
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(JSON.stringify(body));
    };
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string' && byIdempotencyKey.has(key)) return answer(200, byIdempotencyKey.get(key));
    const created = (body: StripeObject) => {
      if (typeof key === 'string') byIdempotencyKey.set(key, body);
      answer(200, body);
    };
    const port = (server.address() as AddressInfo).port;

    if (req.method === 'POST' && url.pathname === '/v1/customers') {
      return created({
        id: id('cus'),
        object: 'customer',
        metadata: fieldsUnder(form, 'metadata'),
        invoice_settings: { default_payment_method: null },
        livemode: false,
      });
    }
    if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
      const sessionId = id('cs_test');
      return created({
        id: sessionId,
        object: 'checkout.session',
        mode: form.mode,
        customer: form.customer,
        client_reference_id: form.client_reference_id ?? null,
        amount_total: Number(form['line_items[0][price_data][unit_amount]']),
        currency: form['line_items[0][price_data][currency]'],
        metadata: fieldsUnder(form, 'metadata'),
        payment_status: 'unpaid',
        status: 'open',
        payment_intent: null,
        success_url: form.success_url,
        cancel_url: form.cancel_url,
        url: `http://127.0.0.1:${port}/pay/${sessionId}`,
        livemode: false,
      });
    }
    if (req.method === 'POST' && url.pathname === '/v1/setup_intents') {
      const intentId = id('seti');
      return created({
        id: intentId,
        object: 'setup_intent',
        customer: form.customer,
        usage: form.usage,
        metadata: fieldsUnder(form, 'metadata'),
        client_secret: `${intentId}_secret_standin`,
        status: 'requires_payment_method',
        livemode: false,
      });
    }
    if (req.method === 'POST' && url.pathname === '/v1/billing_portal/sessions') {
      const sessionId = id('bps');
      return created({
        id: sessionId,
        object: 'billing_portal.session',
        customer: form.customer,
        return_url: form.return_url,
        url: `http://127.0.0.1:${port}/portal/${sessionId}`,
        livemode: false,
      });
    }
    if (req.method === 'POST' && url.pathname === '/v1/payment_intents') {
      // A saved card ending in 0002 is declined, as Stripe's test card of that number is.
      if (cards.get(form.customer ?? '')?.last4 === '0002') {
        return answer(402, {
          error: {
            type: 'card_error',
            code: 'card_declined',
            decline_code: 'generic_decline',
            message: 'Your card was declined.',
          },
        });
      }
      const intent = {
        id: id('pi'),
        object: 'payment_intent',
        amount: Number(form.amount),
        currency: form.currency,
        customer: form.customer,
        payment_method: form.payment_method,
        metadata: fieldsUnder(form, 'metadata'),
        status: 'succeeded',
        livemode: false,
      };
      paymentIntents.push(intent);
      return created(intent);
    }
    if (req.method === 'GET' && url.pathname === '/v1/refunds') {
      const charge = url.searchParams.get('charge');
      const data = structuredClone(refunds.filter((r) => r.charge === charge));
      await standIn.beforeRefundsListAnswer?.();
      return answer(200, { object: 'list', url: '/v1/refunds', has_more: false, data });
    }
    const refundId = /^\/v1\/refunds\/([^/]+)$/.exec(url.pathname)?.[1];
    const known = refunds.find((r) => r.id === refundId);
    if (req.method === 'GET' && known) return answer(200, known);
    const cardsOf = /^\/v1\/customers\/([^/]+)\/payment_methods$/.exec(url.pathname)?.[1];
    if (req.method === 'GET' && cardsOf) {
      const card = cards.get(cardsOf);
      return answer(200, {
        object: 'list',
        url: url.pathname,
        has_more: false,
        data: card
          ? [
              {
                id: id('pm'),
                object: 'payment_method',
                type: 'card',
                customer: cardsOf,
                card: { ...card, exp_month: 12, exp_year: 2030 },
              },
            ]
          : [],
      });
    }
    const chargeId = /^\/v1\/charges\/([^/]+)$/.exec(url.pathname)?.[1];
    if (req.method === 'GET' && chargeId && charges.has(chargeId)) return answer(200, charges.get(chargeId));
    answer(404, {
      error: {
        type: 'invalid_request_error',
        message: `Unrecognized request URL (${req.method}: ${url.pathname})`,
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The handler reads the hook a test sets here (requests come only once it is made).
  const standIn: StripeStandIn = {
    api: { host: '127.0.0.1', port: (server.address() as AddressInfo).port, protocol: 'http' },
    requests,
    charges,
    refunds,
    cards,
    paymentIntents,
    loseAnswers(path, count) {
      lost = { path, count };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return standIn;
}

async function readAll(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `{ a: '1' }` of the form fields `name[a]=1`. */
function fieldsUnder(form: Record<string, string>, name: string): Record<string, string> {
  const prefix = `${name}[`;
  return Object.fromEntries(
    Object.entries(form)
      .filter(([k]) => k.startsWith(prefix) && k.endsWith(']') && !k.slice(prefix.length).includes('['))
      .map(([k, v]) => [k.slice(prefix.length, -1), v]),
  );
}
