import type { AppView } from '../../../deploy/app-views.js';
import { html, type SafeHtml } from '../../../http/html.js';
import { chart } from '../charts.js';
import { money } from '../format.js';
import type { DashboardPage, PageView } from '../page.js';

interface Usage {
  total_micros: number;
  by_provider: { provider: string; cost_micros: number }[];
  daily: { date: string; cost_micros: number; by_provider: Record<string, number> }[];
}

interface BurnRate {
  micros_per_hour: number;
  spent_last_24h_micros: number;
  runway_hours: number | null;
}

/** Home: the balance (live), how fast it goes, and the last 30 days of spend by provider. */
export const homePage: DashboardPage = {
  path: '/',
  nav: 'home',
  title: () => 'Home',
  async render(view) {
    const balance = await view.ctx.balances.micros(view.user!.tenantId);
    // Billing is the owners': others would follow the link to a 403.
    const balanceBlock = html`<section class="card" aria-labelledby="balance-title">
<h2 id="balance-title">Balance</h2>
<p class="figure" data-live="balance" data-micros="${balance}" aria-live="polite">${money(balance)}</p>
${view.user!.role === 'owner' ? html`<p><a href="${view.base}/billing">Add credit</a></p>` : null}
</section>`;
    if (view.user!.role !== 'owner') {
      return html`<div class="cards">${balanceBlock}</div>
<p class="muted">Spending figures are shown to the workspace's owners.</p>`;
    }
    const [usage, burn, steps] = await Promise.all([
      view.api.get<Usage>('/api/billing/usage?days=30'),
      view.api.get<BurnRate>('/api/billing/burn-rate'),
      firstSteps(view, balance),
    ]);
    const rate = burn.ok ? burn.body : null;
    // No spend in the last day projects no runway: the line then says only what was spent.
    const runway = rate?.runway_hours == null ? '' : ` · runway ${runwayText(rate.runway_hours)}`;
    const burnBlock = html`<section class="card" aria-labelledby="burn-title">
<h2 id="burn-title">Burn rate</h2>
<p class="figure">${rate ? `${money(rate.micros_per_hour)}/h` : '—'}</p>
<p class="muted">${rate ? `${money(rate.spent_last_24h_micros)} in the last 24 hours${runway}` : ''}</p>
</section>`;
    const days = usage.ok ? usage.body.daily : [];
    const providers = usage.ok ? usage.body.by_provider.map((p) => p.provider) : [];
    const spend = chart('spend-chart', {
      title: 'Spend per day, last 30 days, by provider',
      x: days.map((d) => d.date),
      series: providers.map((provider) => ({
        label: provider,
        values: days.map((d) => d.by_provider[provider] ?? 0),
      })),
      unit: 'usd_micros',
      kind: 'bars',
    });
    return html`${steps}<div class="cards">${balanceBlock}${burnBlock}
<section class="card" aria-labelledby="month-title"><h2 id="month-title">Last 30 days</h2>
<p class="figure">${money(usage.ok ? usage.body.total_micros : 0)}</p></section></div>
${spend}`;
  },
};

/**
 * A new workspace's first steps, each a link to where it is taken, marked done once it is: shown
 * to owners until the workspace's first deploy, the step that puts the others to use.
 */
async function firstSteps(view: PageView, balance: number): Promise<SafeHtml | null> {
  const [connections, apps] = await Promise.all([
    view.api.get<{ connections: { status: string }[] }>('/api/connections'),
    view.api.get<{ apps: AppView[] }>('/api/apps'),
  ]);
  if (!connections.ok || !apps.ok || apps.body.apps.some((app) => app.deployment)) return null;
  const steps = [
    { done: balance > 0, path: '/billing', text: 'Add credit', why: 'every metered call is paid from it' },
    {
      done: connections.body.connections.some((c) => c.status === 'connected'),
      path: '/integrations',
      text: 'Connect an integration',
      why: 'the providers your tools call',
    },
    { done: false, path: '/tools', text: 'Deploy a tool', why: 'it gets its own address and App Key' },
  ];
  return html`<section class="card" aria-labelledby="start-title" id="first-steps"><h2 id="start-title">Get started</h2>
<ol>${steps.map((step) =>
    step.done
      ? html`<li>${step.text} <span class="muted">(done)</span></li>`
      : html`<li><a href="${view.base}${step.path}">${step.text}</a> <span class="muted">(${step.why})</span></li>`,
  )}</ol></section>`;
}

function runwayText(hours: number): string {
  if (hours >= 48) return `about ${Math.floor(hours / 24)} days`;
  return `about ${Math.max(1, Math.round(hours))} hours`;
}
