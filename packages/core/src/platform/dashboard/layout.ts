import type { PagePolicy } from '../../http/html.js';
import { html, type SafeHtml } from '../../http/html.js';

/**
 * The dashboard's sections, in the order the navigation lists them. Billing and keys are the
 * owners' (their pages refuse anyone else), so only owners are shown those links.
 */
export const NAV = [
  { key: 'home', path: '/', label: 'Home' },
  { key: 'billing', path: '/billing', label: 'Billing', ownersOnly: true },
  { key: 'integrations', path: '/integrations', label: 'Integrations' },
  { key: 'tools', path: '/tools', label: 'Tools' },
  { key: 'deployments', path: '/deployments', label: 'Deployments' },
  { key: 'keys', path: '/keys', label: 'Keys', ownersOnly: true },
  { key: 'members', path: '/members', label: 'Members' },
  { key: 'settings', path: '/settings', label: 'Settings' },
] as const;

export type NavKey = (typeof NAV)[number]['key'] | 'pricing';

/**
 * The dashboard's policy: its own script and stylesheet only, no inline script or style, calls
 * back to this origin only, forms post only here, never framed.
 */
export const DASHBOARD_POLICY: PagePolicy = {
  scripts: ["'self'"],
  styles: ["'self'"],
  connectTo: ["'self'"],
  images: ["'self'", 'data:'],
  formTargets: ["'self'"],
};

/** A link a refusal offers, to where it can be put right. */
export interface NoticeLink {
  href: string;
  text: string;
}

/** Who is signed in, as the header shows them. */
export interface ShellUser {
  email: string | null;
  workspace: string;
  role: string;
}

export interface ShellOptions {
  title: string;
  base: string;
  nav: NavKey | null;
  user: ShellUser | null;
  csrf: string | null;
  /** Cache-busting suffix of the asset URLs. */
  assetVersion: string;
  /** A notice above the page: what an action did, or why it was refused. */
  notice?: { kind: 'done' | 'error'; text: string; next?: NoticeLink } | null;
  /** Offer "Sign in" in the header to a signed-out visitor (not on the sign-in page itself). */
  signInLink?: boolean;
  body: SafeHtml;
}

/** The document every dashboard page shares: header, navigation, the page, its assets. */
export function shell(o: ShellOptions): SafeHtml {
  const asset = (name: string) => `${o.base}/static/dashboard/${name}?v=${o.assetVersion}`;
  const notice = o.notice
    ? o.notice.kind === 'done'
      ? html`<p class="notice done" role="status">${o.notice.text}</p>`
      : html`<p class="notice error" role="alert">${o.notice.text}${o.notice.next ? html` <a href="${o.notice.next.href}">${o.notice.next.text}</a>` : null}</p>`
    : null;
  const nav = o.user
    ? html`<nav aria-label="Main"><ul>${NAV.filter(
        (item) => !('ownersOnly' in item) || o.user?.role === 'owner',
      ).map(
        (item) =>
          html`<li><a href="${o.base}${item.path}"${item.key === o.nav ? html` aria-current="page"` : null}>${item.label}</a></li>`,
      )}</ul></nav>`
    : null;
  const who = o.user
    ? html`<div class="who"><span>${o.user.email ?? 'Signed in'}</span> <span class="muted">${o.user.workspace} · ${o.user.role}</span>
<form method="post" action="${o.base}/sign-out"><input type="hidden" name="_csrf" value="${o.csrf ?? ''}"><button type="submit" class="link">Sign out</button></form></div>`
    : html`<div class="who"><a href="${o.base}/pricing">Pricing</a>${o.signInLink === false ? null : html` <a href="${o.base}/sign-in">Sign in</a>`}</div>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${asset('dashboard.css')}">
<script type="module" src="${asset('dashboard.js')}"></script>
</head>
<body data-base="${o.base}">
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="${o.base}/">Service</a>${nav}${who}</header>
<main id="main" tabindex="-1">
<h1>${o.title}</h1>
${notice}
${o.body}
</main>
</body>
</html>
`;
}
