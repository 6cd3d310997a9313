/**
 * The demo host's chat page (the chat UI package's `ChatApp`, built by its `build` script):
 * `GET /` sends a signed-out browser to the sign-in page, which comes back here, and answers a
 * signed-in one an HTML shell that loads the bundle from `/assets/`. The shell runs no inline
 * script: its values reach the page as (escaped) data attributes, so its policy allows scripts
 * and styles from this origin only.
 */
import { type ChatAssets, readChatAssets } from '@service/example-chat-ui/assets';
import express, { type Router } from 'express';
import type { SignIn } from './sign-in.js';
import { escapeHtml } from './sign-in-page.js';

export interface ChatPageOptions {
  /** Where the built page is. Default: the chat UI package's `dist/`. */
  assetsDir?: string;
  productName: string;
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

export function chatPageRoutes(signIn: SignIn, options: ChatPageOptions): Router {
  const router = express.Router();
  // Read once built; until then every visit looks again, so a build made while the host runs counts.
  let assets: ChatAssets | null = null;
  const built = () => {
    assets ??= readChatAssets(options.assetsDir);
    return assets;
  };

  router.get('/', (req, res) => {
    const user = signIn.principalOfHeaders({
      authorization: req.get('authorization'),
      cookie: req.get('cookie'),
    });
    if (!user) {
      res.redirect(302, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
      return;
    }
    const page = built();
    if (!page) {
      res
        .status(503)
        .set({ 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
        .send(
          'The chat page is not built: run `pnpm --filter @service/example-chat-ui build`, then reload.\n',
        );
      return;
    }
    res
      .set(SHELL_HEADERS)
      .send(chatShell({ assets: page, user: user.email ?? user.subject, productName: options.productName }));
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

function chatShell(page: { assets: ChatAssets; user: string; productName: string }): string {
  const { script, stylesheet } = page.assets.manifest;
  const name = escapeHtml(page.productName);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Chat · ${name}</title>
<link rel="stylesheet" href="/assets/${escapeHtml(stylesheet)}">
<script type="module" src="/assets/${escapeHtml(script)}"></script>
</head>
<body>
<div id="chat-root" data-base="/api/service" data-user="${escapeHtml(page.user)}" data-sign-out="/logout" data-title="${name}"></div>
<noscript>The chat page needs JavaScript.</noscript>
</body>
</html>
`;
}
