/**
 * The demo host's pages, all from the chat UI package's bundle (built by its `build` script):
 * the chat page (`ChatApp`) at `GET /`, the orders page (`OrdersPage`) at `GET /orders`, the
 * person's apps (`<AppsPage>`) at `GET /apps` and the review queue (`<ReviewQueue>`) at
 * `GET /review`, each linking the others from its header. Each
 * sends a signed-out browser to the sign-in page, which comes back to it, and answers a
 * signed-in one an HTML shell that loads the bundle from `/assets/`. The shell runs no inline
 * script: its values reach the page as (escaped) data attributes, so its policy allows scripts
 * and styles from this origin only.
 */

import type { Principal } from '@service/core/wire';
import { type ChatAssets, readChatAssets } from '@service/example-chat-ui/assets';
import express, { type Router } from 'express';
import { APPS_PAGE, isReviewer, ORDERS_PAGE, REVIEW_PAGE } from './apps.js';
import type { SignIn } from './sign-in.js';
import { escapeHtml } from './sign-in-page.js';
import type { OrderBooks } from './tools.js';

export interface ChatPageOptions {
  /** Where the built page is. Default: the chat UI package's `dist/`. */
  assetsDir?: string;
  productName: string;
  /** The reviewers' emails: their pages link the review queue. */
  reviewers: readonly string[];
}

/** The shell: never cached (it names the user), scripts, styles and requests to this origin only. */
const SHELL_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** Hashed names change with their content, so a browser may keep each file for good. */
const ASSET_CACHING = 'public, max-age=31536000, immutable';

export function chatPageRoutes(signIn: SignIn, books: OrderBooks, options: ChatPageOptions): Router {
  const router = express.Router();
  // Read once built; until then every visit looks again, so a build made while the host runs counts.
  let assets: ChatAssets | null = null;
  const built = () => {
    assets ??= readChatAssets(options.assetsDir);
    return assets;
  };

  /** The signed-in user of a page request, or null after sending the browser to sign in. */
  const userOf = (req: express.Request, res: express.Response) => {
    const user = signIn.principalOfHeaders({
      authorization: req.get('authorization'),
      cookie: req.get('cookie'),
    });
    if (!user) res.redirect(302, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
    return user;
  };
  /** The built page, or null after answering 503 with the command that builds it. */
  const builtOr503 = (res: express.Response) => {
    const page = built();
    if (!page) {
      res
        .status(503)
        .set({ 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
        .send(
          'The chat page is not built: run `pnpm --filter @service/example-chat-ui build`, then reload.\n',
        );
    }
    return page;
  };

  /** The header's links: every page but the one shown; the review queue for reviewers only. */
  const linksFor = (user: Principal, here: string) =>
    JSON.stringify(
      [
        { href: '/', label: 'Chat' },
        { href: ORDERS_PAGE, label: 'Orders' },
        { href: APPS_PAGE, label: 'Your apps' },
        ...(isReviewer(options.reviewers, user) ? [{ href: REVIEW_PAGE, label: 'Review' }] : []),
      ].filter((link) => link.href !== here),
    );

  /** A page of the bundle: `rootId` names which; `data` adds to what every page is told. */
  const page = (path: string, heading: string, rootId: string, data: Record<string, string> = {}) =>
    router.get(path, (req, res) => {
      const user = userOf(req, res);
      const assets = user && builtOr503(res);
      if (!user || !assets) return;
      res.set(SHELL_HEADERS).send(
        pageShell({
          assets,
          heading,
          rootId,
          data: {
            base: '/api/service',
            user: user.email ?? user.subject,
            'sign-out': '/logout',
            title: options.productName,
            links: linksFor(user, path),
            ...data,
          },
          productName: options.productName,
        }),
      );
    });

  page('/', 'Chat', 'chat-root');
  // The host's own orders page: the orders, a slot for the person's app beside them, and host
  // components a person may remix. Its orders come from `/api/orders`, the host's own API.
  page(ORDERS_PAGE, 'Orders', 'orders-root', { orders: '/api/orders' });
  // The person's apps (`?app=<id>` opens one: the MCP door's app-open card links there), and the
  // review queue, which answers anyone but a reviewer the wire's refusal in words.
  page(APPS_PAGE, 'Your apps', 'apps-root');
  page(REVIEW_PAGE, 'Review', 'review-root');

  router.get('/api/orders', (req, res) => {
    const user = signIn.principalOfHeaders({
      authorization: req.get('authorization'),
      cookie: req.get('cookie'),
    });
    res.set({ 'cache-control': 'no-store' });
    if (!user) {
      res.status(401).json({ error: { code: 'unauthenticated', message: 'Sign in first.' } });
      return;
    }
    res.json(books.listed(user.subject));
  });

  router.get('/assets/:name', (req, res) => {
    const file = built()?.files.get(req.params.name);
    if (!file) {
      res.status(404).type('text/plain').send('No such asset.\n');
      return;
    }
    res
      .set({
        'content-type': file.contentType,
        'cache-control': ASSET_CACHING,
        'x-content-type-options': 'nosniff',
      })
      .send(file.body);
  });

  return router;
}

function pageShell(page: {
  assets: ChatAssets;
  heading: string;
  rootId: string;
  /** The root element's `data-*` attributes: the page's configuration (escaped). */
  data: Record<string, string>;
  productName: string;
}): string {
  const { script, stylesheet } = page.assets.manifest;
  const name = escapeHtml(page.productName);
  const data = Object.entries(page.data)
    .map(([key, value]) => ` data-${key}="${escapeHtml(value)}"`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.heading)} · ${name}</title>
<link rel="stylesheet" href="/assets/${escapeHtml(stylesheet)}">
<script type="module" src="/assets/${escapeHtml(script)}"></script>
</head>
<body>
<div id="${escapeHtml(page.rootId)}"${data}></div>
<noscript>This page needs JavaScript.</noscript>
</body>
</html>
`;
}
