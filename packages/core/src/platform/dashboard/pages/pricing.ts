import { html } from '../../../http/html.js';
import { perUnits, unitPrice } from '../format.js';
import { type DashboardPage, table } from '../page.js';

interface Model {
  id: string;
  name: string;
  context_length: number | null;
  pricing: { prompt_per_million: number; completion_per_million: number };
}

interface Rates {
  name: string;
  rates: { meter: string; model: string | null; unit: string; per: number; usd: number }[];
}

/** The public pricing page: the gateway's models with the platform's margin, and integrations' rates. */
export const pricingPage: DashboardPage = {
  path: '/pricing',
  nav: 'pricing',
  public: true,
  title: () => 'Pricing',
  async render(view) {
    const [models, integrations] = await Promise.all([
      view.api.get<{ models: Model[] }>('/api/pricing/models'),
      view.api.get<{ integrations: { slug: string; name: string }[] }>('/api/pricing/integrations'),
    ]);
    const slugs = integrations.ok ? integrations.body.integrations : [];
    const rates = await Promise.all(
      slugs.map((i) => view.api.get<Rates>(`/api/pricing/public/${encodeURIComponent(i.slug)}`)),
    );
    return html`<p>Prepaid credit in US dollars: every call is billed at these prices, margin included.</p>
<section aria-labelledby="models-title"><h2 id="models-title">Models</h2>
${
  models.ok
    ? table(
        'Models',
        ['Model', 'Context', 'Input, per million tokens', 'Output, per million tokens'],
        models.body.models.map((m) => [
          m.name,
          m.context_length === null ? '' : `${m.context_length.toLocaleString('en-US')} tokens`,
          unitPrice(m.pricing.prompt_per_million),
          unitPrice(m.pricing.completion_per_million),
        ]),
        'No models are priced yet.',
      )
    : html`<p class="muted">The model catalog cannot be read just now.</p>`
}</section>
<section aria-labelledby="int-title"><h2 id="int-title">Integrations</h2>
${
  slugs.length === 0
    ? html`<p class="muted">No integration has public rates yet.</p>`
    : slugs.map((i, n) => {
        const answer = rates[n];
        return html`<h3>${i.name}</h3>${table(
          `Rates of ${i.name}`,
          ['Meter', 'Model', 'Price'],
          (answer?.ok ? answer.body.rates : []).map((r) => [
            // `input_tokens` reads as "Input tokens".
            r.meter.charAt(0).toUpperCase() + r.meter.slice(1).replaceAll('_', ' '),
            r.model ?? 'any',
            `${unitPrice(r.usd)} ${perUnits(r.per, r.unit)}`,
          ]),
          'No public rates.',
        )}`;
      })
}</section>`;
  },
};
