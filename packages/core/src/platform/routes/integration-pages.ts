import { type Context, Hono } from 'hono';
import { escapeHtml } from '../../http/html.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { requireSession, type SessionCaller } from '../internal/session.js';
import { messagePage, pageHeaders, pageLayout, signInAction } from './page-html.js';

export interface IntegrationPagesOptions {
  /** The development IdP's sign-in page runs here (outside production with no outside IdP). */
  devSignIn: boolean;
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * `/integrations/{slug}`, where a `not_connected` refusal's `connect_url` points: for anyone in
 * the workspace, whether it has a connection to the integration, and how to make one and bind it
 * to an app. Signed out: a way to sign in and come back. An unknown integration: 404.
 *
 * @see docs/api/connections.md
 */
export function integrationPageRoutes(
  ctx: PlatformContext,
  options: IntegrationPagesOptions,
): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const basePath = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  const page = (c: Context, status: 200 | 401 | 404, html: string) => c.body(html, status, pageHeaders);

  app.get('/integrations/:slug', async (c) => {
    c.set('errorShape', 'flat');
    const slug = c.req.param('slug');
    const provider = SLUG.test(slug) ? await ctx.providers.get(slug) : null;
    if (!provider) {
      return page(c, 404, messagePage('Not found', `There is no integration named ${slug}.`));
    }
    let caller: SessionCaller;
    try {
      caller = await requireSession(ctx, c);
    } catch (error) {
      if (!(error instanceof PlatformError) || error.status !== 401) throw error;
      const here = `${basePath}/integrations/${encodeURIComponent(slug)}`;
      return page(
        c,
        401,
        messagePage(
          'Sign in',
          `Sign in to see the workspace's connection to ${slug}.`,
          signInAction({ basePath, baseUrl: ctx.baseUrl, devSignIn: options.devSignIn }, here),
        ),
      );
    }
    const connections = (await ctx.connections.list(caller.tenantId)).filter((row) => row.provider === slug);
    return page(c, 200, integrationPage(slug, connections, ctx.baseUrl));
  });

  return app;
}

interface ConnectionSummary {
  id: string;
  display_name: string;
  status: string;
}

function integrationPage(slug: string, connections: ConnectionSummary[], baseUrl: string): string {
  const list =
    connections.length === 0
      ? `<p id="status">This workspace has no connection to ${escapeHtml(slug)} yet.</p>`
      : `<p id="status">This workspace's connections to ${escapeHtml(slug)}:</p>
<ul>${connections
          .map(
            (row) =>
              `<li><strong>${escapeHtml(row.display_name)}</strong> (<code>${escapeHtml(row.id)}</code>): ${escapeHtml(row.status)}</li>`,
          )
          .join('')}</ul>`;
  const managed = `curl -X POST ${baseUrl}/api/connections -H 'content-type: application/json' -b <session> \\
  -d '{"provider":"${slug}"}'`;
  const own = `curl -X POST ${baseUrl}/api/connections -H 'content-type: application/json' -b <session> \\
  -d '{"provider":"${slug}","profile":"byok_static","credential":{"api_key":"…"}}'`;
  const bind = `curl -X POST ${baseUrl}/api/apps/<appId>/connections -H 'content-type: application/json' -b <session> \\
  -d '{"connection_id":"<connectionId>"}'`;
  return pageLayout(
    slug,
    `${list}
<h2>Connect it</h2>
<p>Create a connection (owners and members; a deployed tool can also create one with its App
Key), then bind it to the app whose calls need it. With the platform's managed credential:</p>
<pre><code>${escapeHtml(managed)}</code></pre>
<p>Or with your own key:</p>
<pre><code>${escapeHtml(own)}</code></pre>
<pre><code>${escapeHtml(bind)}</code></pre>`,
  );
}
