/**
 * The bundle's entry: renders the page whose root element the host's HTML shell has:
 * `#chat-root` (`ChatApp`), `#orders-root` (`OrdersPage`), `#apps-root` (`AppsHostPage`, the
 * person's apps) or `#review-root` (`ReviewHostPage`, the review queue). The shell configures it
 * through data attributes (`data-base`, `data-user`, `data-sign-out`, `data-title`, `data-links`:
 * the header's links to the host's other pages as JSON `[{ "href", "label" }]`; the orders page's
 * `data-orders` is the host's orders API), so the pages need no inline script under their strict
 * CSP. The apps page opens the app its URL's `?app=` names.
 */
import { createRoot } from 'react-dom/client';
import { AppsHostPage, ReviewHostPage } from './apps-pages';
import { ChatApp } from './chat-app';
import { OrdersPage } from './orders-page';
import type { PageLink } from './page-header';
import '@service/react/styles.css';
import './chat.css';

/** Signs out at the host's sign-out URL, then reloads: the host sends a signed-out visitor to sign in. */
async function signOutAt(url: string): Promise<void> {
  await fetch(url, { method: 'POST', credentials: 'same-origin' });
  window.location.reload();
}

/** The header's links from `data-links`; anything that is not a list of `{ href, label }` is none. */
function linksOf(json: string | undefined): PageLink[] {
  if (!json) return [];
  try {
    const parsed = JSON.parse(json) as unknown;
    return Array.isArray(parsed)
      ? parsed.filter(
          (link): link is PageLink => typeof link?.href === 'string' && typeof link?.label === 'string',
        )
      : [];
  } catch {
    return [];
  }
}

/** What every page reads from its root element. */
function pageProps(root: HTMLElement) {
  const { base, user, signOut, title, links } = root.dataset;
  return {
    ...(base ? { base } : {}),
    ...(user ? { user } : {}),
    ...(title ? { title } : {}),
    links: linksOf(links),
    ...(signOut ? { onSignOut: () => void signOutAt(signOut) } : {}),
  };
}

const roots = ['chat-root', 'orders-root', 'apps-root', 'review-root'] as const;
const root = roots.map((id) => document.getElementById(id)).find((element) => element !== null);

if (!root) throw new Error(`The page needs an element with id ${roots.map((id) => `"${id}"`).join(', ')}.`);
switch (root.id) {
  case 'chat-root':
    createRoot(root).render(<ChatApp {...pageProps(root)} />);
    break;
  case 'orders-root': {
    const { orders } = root.dataset;
    if (!orders) throw new Error('The orders page needs data-orders (the host’s orders API).');
    createRoot(root).render(<OrdersPage ordersUrl={orders} {...pageProps(root)} />);
    break;
  }
  case 'apps-root': {
    const app = new URLSearchParams(window.location.search).get('app');
    createRoot(root).render(<AppsHostPage {...pageProps(root)} {...(app ? { openAppId: app } : {})} />);
    break;
  }
  case 'review-root':
    createRoot(root).render(<ReviewHostPage {...pageProps(root)} />);
    break;
}
