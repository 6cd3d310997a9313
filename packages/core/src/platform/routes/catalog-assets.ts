import { type Context, Hono } from 'hono';
import { CATALOG_SLUG, ICON_HEADERS, monogramSvg } from '../../catalog/icons.js';
import type { IntegrationInfo } from '../../catalog/integrations.js';
import type { PublicRate, PublicRateTable } from '../../catalog/pricing.js';
import { escapeHtml } from '../../http/html.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { messagePage, pageHeaders, pageLayout } from './page-html.js';

/**
 * What the catalog links to, served by the platform so no link is dead: each integration's logo
 * and docs page, and each tool's icon (generated monograms). Public; nothing of a tenant.
 *
 * @see docs/api/integrations.md "Logos and docs pages"
 */
export function catalogAssetRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const notFound = (c: Context) =>
    c.body(messagePage('Not found', 'There is no such page.'), 404, pageHeaders);
  /** The slug of `{slug}.svg`, or null. */
  const svgSlug = (file: string) => {
    const slug = file.endsWith('.svg') ? file.slice(0, -4) : '';
    return CATALOG_SLUG.test(slug) ? slug : null;
  };

  app.get('/static/integrations/:file', async (c) => {
    const slug = svgSlug(c.req.param('file'));
    const integration = slug ? await ctx.integrations.publicDetail(slug) : null;
    if (!slug || !integration) return notFound(c);
    return c.body(monogramSvg(slug, integration.name), 200, ICON_HEADERS);
  });

  // A tool's icon is drawn from its slug alone: a tool without an icon of its own links here.
  app.get('/static/tools/:file', (c) => {
    const slug = svgSlug(c.req.param('file'));
    if (!slug) return notFound(c);
    return c.body(monogramSvg(slug, slug.replace(/-/g, ' ')), 200, ICON_HEADERS);
  });

  app.get('/docs/integrations/:slug', async (c) => {
    const slug = c.req.param('slug');
    const integration = CATALOG_SLUG.test(slug) ? await ctx.integrations.find(slug) : null;
    if (!integration?.enabled) return notFound(c);
    const prices = await ctx.pricing.detail(slug);
    return c.body(docsPage(integration, prices, ctx.baseUrl), 200, pageHeaders);
  });

  return app;
}

function docsPage(integration: IntegrationInfo, prices: PublicRateTable | null, baseUrl: string): string {
  const e = escapeHtml;
  const profiles = [...new Set([integration.default_profile, ...integration.supported_profiles])];
  const vars = integration.env_bootstrap.vars;
  const priceRows = prices
    ? `<table id="prices"><tr><th>Meter</th><th>Model</th><th>Price (USD)</th></tr>${prices.rates
        .map(
          (rate) =>
            `<tr><td>${e(rate.meter)}</td><td>${e(rate.model ?? 'any')}</td><td>${e(priceText(rate))}</td></tr>`,
        )
        .join('')}</table>`
    : '<p id="prices">This integration has no public prices.</p>';
  const enable = `curl -X POST ${baseUrl}/api/integrations/${integration.provider} \\
  -H 'content-type: application/json' -b <session> -d '{"enabled":true}'`;
  return pageLayout(
    integration.name,
    `<p id="description">${e(integration.description)}</p>
<p>Category: <strong>${e(integration.category)}</strong></p>
<h2>Profiles</h2>
<ul id="profiles">${profiles
      .map((p) => `<li><code>${e(p)}</code>${p === integration.default_profile ? ' (default)' : ''}</li>`)
      .join('')}</ul>
<h2>Environment</h2>
${
  vars.length
    ? `<p>A deployed tool bound to it gets these variables (restart: <code>${e(integration.env_bootstrap.restart)}</code>):</p>
<ul id="env">${vars.map((v) => `<li><code>${e(v.name)}</code> from <code>${e(v.value_from)}</code></li>`).join('')}</ul>`
    : '<p id="env">It sets no environment variables.</p>'
}
<h2>Prices</h2>
${priceRows}
<h2>Enable it</h2>
<p>In a workspace, as an owner or member:</p>
<pre>${e(enable)}</pre>`,
  );
}

function priceText(rate: PublicRate): string {
  return rate.per === 1
    ? `${rate.usd} per ${rate.unit}`
    : `${rate.usd} per ${rate.per.toLocaleString('en-US')} ${rate.unit}s`;
}
