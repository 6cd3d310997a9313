import { getCookie } from 'hono/cookie';
import {
  CREDIT_PACKS_USD,
  MAX_PURCHASE_USD,
  MIN_PURCHASE_USD,
  purchaseMicros,
} from '../../../billing/payments/processor.js';
import type { SpendCapView } from '../../../billing/spend-caps.js';
import { html, type SafeHtml } from '../../../http/html.js';
import { SESSION_COOKIE } from '../../../identity/sessions.js';
import { billingCsrfToken } from '../../routes/billing-pages.js';
import { exactUsd, money, when } from '../format.js';
import { type DashboardPage, field, fromAnswer, input, type PageView, table } from '../page.js';

interface Customer {
  card: { brand: string; last4: string } | null;
  autoReload: { thresholdMicros: number; amountMicros: number } | null;
}

interface Transaction {
  id: string;
  kind: string;
  amountMicros: number;
  balanceAfterMicros: number;
  description: string | null;
  createdAt: string;
}

const MICROS = 1_000_000;

/** How many warnings one app's caps take (the spend caps API's limit). */
const MAX_WARNINGS = 5;

/** A USD amount typed in a form, as micros; null for blank, NaN for anything not a sum of money. */
function usdField(value: string): number | null {
  const text = value.trim();
  if (text === '') return null;
  return /^\d{1,7}(\.\d{1,2})?$/.test(text) ? Math.round(Number(text) * MICROS) : Number.NaN;
}

/**
 * A spend cap typed in a form, as micros: as `usdField`, but down to the micro, as caps are kept
 * (and as the form shows a cap set through the API: `0.0036`). Null for blank, infinity past the
 * largest cap the API keeps, NaN for anything else.
 */
function capField(value: string): number | null {
  const text = value.trim();
  if (text === '') return null;
  const parts = /^(\d{1,30})(?:\.(\d{1,6}))?$/.exec(text);
  if (!parts) return Number.NaN;
  // Counted exactly (a float would round the micros of a cap in the billions), then checked
  // against the largest cap the API keeps.
  const micros = BigInt(parts[1]!) * BigInt(MICROS) + BigInt((parts[2] ?? '').padEnd(6, '0'));
  return micros > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(micros);
}

/** The largest cap the API keeps, in the form's words: `9,007,199,254.740991`. */
const MAX_CAP_USD = `${(BigInt(Number.MAX_SAFE_INTEGER) / BigInt(MICROS)).toLocaleString('en-US')}.${Number.MAX_SAFE_INTEGER % MICROS}`;

/**
 * Billing: the balance (live), credit packs bought through the configured processor, the saved
 * card and auto-reload (with Stripe), spend caps per app, and the wallet's transactions. Owners
 * only, as the billing API decides; anyone else is told so.
 */
export const billingPage: DashboardPage = {
  path: '/billing',
  nav: 'billing',
  title: () => 'Billing',
  async render(view) {
    const user = view.user!;
    if (user.role !== 'owner') {
      return { status: 403, message: "Only the workspace's owners see and change billing." };
    }
    const cursor = view.c.req.query('cursor');
    const [customer, caps, transactions] = await Promise.all([
      view.api.get<Customer>('/api/billing/customer'),
      view.api.get<{ caps: SpendCapView[] }>('/api/billing/spend-caps'),
      view.api.get<{ transactions: Transaction[]; nextCursor: string | null }>(
        `/api/billing/transactions?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      ),
    ]);
    const balance = await view.ctx.balances.micros(user.tenantId);
    const workspace = (await view.ctx.accounts.workspaceName(user.tenantId)) ?? user.tenantId;
    return html`${await completedPurchase(view)}
<div class="cards"><section class="card" aria-labelledby="balance-title"><h2 id="balance-title">Balance</h2>
<p class="figure" id="balance" data-live="balance" data-micros="${balance}" aria-live="polite">${money(balance)}</p>
<p class="muted">Workspace <span id="workspace">${workspace}</span></p></section></div>
${buyCredit(view)}
${cardAndReload(view, customer.ok ? customer.body : customer.status === 404 ? null : 'unavailable')}
${spendCaps(view, caps.ok ? caps.body.caps : [])}
<section aria-labelledby="transactions-title"><h2 id="transactions-title">Transactions</h2>
${table(
  'Transactions, newest first',
  ['When', 'Kind', 'Amount', 'Balance after', 'Description'],
  (transactions.ok ? transactions.body.transactions : []).map((t) => [
    when(t.createdAt),
    t.kind,
    money(t.amountMicros),
    money(t.balanceAfterMicros),
    t.description ?? '',
  ]),
  transactions.ok ? 'No transactions yet.' : 'This page of transactions does not exist.',
)}
${transactions.ok ? null : html`<p><a href="${view.base}/billing#transactions-title">Newest transactions</a></p>`}
${transactions.ok && transactions.body.nextCursor ? html`<p><a href="${view.base}/billing?cursor=${transactions.body.nextCursor}#transactions-title">Older transactions</a></p>` : null}
</section>`;
  },
  actions: {
    portal: {
      done: 'Opened the card portal.',
      async run(view) {
        const answer = await view.api.send<{ url: string }>('POST', '/api/billing/portal');
        return answer.ok ? { redirect: answer.body.url } : fromAnswer(answer);
      },
    },
    'auto-reload': {
      done: 'Auto-reload saved.',
      async run(view, fields) {
        const threshold = usdField(field(fields, 'threshold'));
        const pack = Number(field(fields, 'pack'));
        // Checked here in the form's words: the API would name its fields (autoReload.thresholdUsd).
        if (threshold === null || Number.isNaN(threshold) || purchaseMicros(threshold / MICROS) === null)
          return {
            refused: `Enter the threshold in USD from ${MIN_PURCHASE_USD} to ${MAX_PURCHASE_USD}, like 10 or 12.50.`,
          };
        if (!(CREDIT_PACKS_USD as readonly number[]).includes(pack))
          return { refused: 'Choose one of the credit packs.' };
        return fromAnswer(
          await view.api.send('PATCH', '/api/billing/customer', {
            autoReload: { thresholdUsd: threshold / MICROS, pack },
          }),
        );
      },
    },
    'auto-reload-off': {
      done: 'Auto-reload turned off.',
      run: async (view) =>
        fromAnswer(await view.api.send('PATCH', '/api/billing/customer', { autoReload: null })),
    },
    caps: {
      done: 'Spend caps saved.',
      async run(view, fields) {
        const daily = capField(field(fields, 'daily'));
        const monthly = capField(field(fields, 'monthly'));
        if (Number.isNaN(daily) || Number.isNaN(monthly))
          return { refused: 'Enter caps in USD, like 5 or 12.50, or leave them blank.' };
        if (daily === Number.POSITIVE_INFINITY || monthly === Number.POSITIVE_INFINITY)
          return { refused: `A cap can be at most USD ${MAX_CAP_USD}: leave it blank for no cap.` };
        // Said in the form's words, not the API's field names: a cap of nothing is no cap.
        if (daily === 0 || monthly === 0)
          return { refused: 'A cap must be more than USD 0: leave it blank for no cap.' };
        if (daily !== null && monthly !== null && daily > monthly)
          return {
            refused:
              'The daily cap is above the monthly cap, which would stop calls first: lower the daily cap or raise the monthly one.',
          };
        const warnText = field(fields, 'warn').trim();
        const written = warnText === '' ? [] : warnText.split(/[\s,]+/);
        // Written as whole percents (not 0x10 or 1e1, which Number reads), at most the API's five.
        const warn = written.map((pct) => (/^\d{1,2}$/.test(pct) ? Number(pct) : Number.NaN));
        if (warn.length > MAX_WARNINGS || warn.some((pct) => !(pct >= 1 && pct <= 99)))
          return { refused: 'Warnings are whole percents from 1 to 99, like 50, 80, and at most five.' };
        return fromAnswer(
          await view.api.send('PUT', '/api/billing/spend-caps', {
            app_id: field(fields, 'app'),
            daily_micros: daily,
            monthly_micros: monthly,
            warn_pcts: warn,
          }),
        );
      },
    },
  },
};

/** After the development processor's checkout: the credit the purchase added. */
async function completedPurchase(view: PageView): Promise<SafeHtml | null> {
  const id = view.c.req.query('purchase');
  if (!id || !/^[0-9a-f-]{36}$/.test(id)) return null;
  const purchase = await view.ctx.devPayments?.purchase(view.user!.tenantId, id);
  if (!purchase?.completedAt) return null;
  return html`<p class="notice done" role="status" id="completed">Added ${money(purchase.amountMicros)} of credit.</p>`;
}

function buyCredit(view: PageView): SafeHtml {
  if (!view.ctx.payments) {
    return html`<section aria-labelledby="buy-title"><h2 id="buy-title">Add credit</h2><p class="muted">No payment processor is configured.</p></section>`;
  }
  // The packs post to the purchase form route, which starts the purchase with the processor.
  const cookie = getCookie(view.c, SESSION_COOKIE) ?? '';
  return html`<section aria-labelledby="buy-title"><h2 id="buy-title">Add credit</h2>
<form method="post" action="${view.base}/billing/purchase" aria-label="Buy a credit pack"><input type="hidden" name="csrf_token" value="${billingCsrfToken(cookie)}"><input type="hidden" name="workspace" value="${view.user!.tenantId}">
${CREDIT_PACKS_USD.map((usd) => html`<button type="submit" name="pack" value="${usd}" id="pack-${usd}">Buy USD ${usd}</button>`)}
</form></section>`;
}

/** The saved card and auto-reload: `null` without Stripe; `unavailable` while it does not answer. */
function cardAndReload(view: PageView, customer: Customer | null | 'unavailable'): SafeHtml {
  if (customer === 'unavailable') {
    return html`<section aria-labelledby="card-title"><h2 id="card-title">Card and auto-reload</h2>
<p class="muted">The payment processor is not answering: the saved card and auto-reload show here again once it does.</p></section>`;
  }
  if (!customer) {
    return html`<section aria-labelledby="card-title"><h2 id="card-title">Card and auto-reload</h2>
<p class="muted">A saved card and auto-reload come with the Stripe processor.</p></section>`;
  }
  const reload = customer.autoReload;
  return html`<section aria-labelledby="card-title"><h2 id="card-title">Card and auto-reload</h2>
<p>${customer.card ? `Saved card: ${customer.card.brand} ending ${customer.card.last4}` : 'No card saved.'}</p>
${view.form('portal', html``, { submit: customer.card ? 'Manage cards' : 'Save a card', buttonClass: 'secondary' })}
<p>${reload ? `Auto-reload: buy ${money(reload.amountMicros)} when the balance falls below ${money(reload.thresholdMicros)}.` : 'Auto-reload is off.'}</p>
${view.form(
  'auto-reload',
  html`${input('reload-threshold', 'When the balance falls below (USD)', { name: 'threshold', type: 'text', value: reload ? reload.thresholdMicros / MICROS : '', required: true })}
<label for="reload-pack">Buy</label><select id="reload-pack" name="pack">${CREDIT_PACKS_USD.map((usd) => html`<option value="${usd}"${reload?.amountMicros === usd * MICROS ? html` selected` : null}>USD ${usd}</option>`)}</select>`,
  { submit: 'Save auto-reload', label: 'Auto-reload' },
)}
${reload ? view.form('auto-reload-off', html``, { submit: 'Turn auto-reload off', buttonClass: 'secondary' }) : null}
</section>`;
}

function spendCaps(view: PageView, caps: SpendCapView[]): SafeHtml {
  const usd = (micros: number | null) => (micros === null ? '' : exactUsd(micros));
  return html`<section aria-labelledby="caps-title"><h2 id="caps-title">Spend caps</h2>
<p class="muted">A cap stops an app's metered calls for the rest of its day or month; warnings notify at the percents given.</p>
${
  caps.length === 0
    ? html`<p class="muted">No apps yet: caps apply per app.</p>`
    : caps.map(
        (cap) => html`<fieldset><legend>${cap.app_name} (${cap.app_slug})</legend>
<p>Today ${money(cap.spent.daily_micros)}${cap.daily_micros !== null ? ` of ${money(cap.daily_micros)}` : ''} · this month ${money(cap.spent.monthly_micros)}${cap.monthly_micros !== null ? ` of ${money(cap.monthly_micros)}` : ''} · daily resets ${when(cap.resets_at.daily)}</p>
${view.form(
  'caps',
  html`<input type="hidden" name="app" value="${cap.app_id}">
${input(`cap-daily-${cap.app_id}`, 'Daily cap (USD, blank for none)', { name: 'daily', value: usd(cap.daily_micros) })}
${input(`cap-monthly-${cap.app_id}`, 'Monthly cap (USD, blank for none)', { name: 'monthly', value: usd(cap.monthly_micros) })}
${input(`cap-warn-${cap.app_id}`, 'Warn at (percents)', { name: 'warn', value: cap.warn_pcts.join(', '), placeholder: '50, 80' })}`,
  { submit: 'Save caps', label: `Spend caps of ${cap.app_name}` },
)}</fieldset>`,
      )
}</section>`;
}
