/**
 * The bundle's entry: renders `ChatApp` into `#chat-root`, or `OrdersPage` into `#orders-root`,
 * configured by the host's HTML shell through data attributes (`data-base`, `data-user`,
 * `data-sign-out`, `data-title`; the chat's `data-orders` links the orders page, the orders
 * page's `data-orders` is the host's orders API and `data-chat` links the chat), so the pages
 * need no inline script under their strict CSP.
 */
import { createRoot } from 'react-dom/client';
import { ChatApp } from './chat-app';
import { OrdersPage } from './orders-page';
import '@service/react/styles.css';
import './chat.css';

/** Signs out at the host's sign-out URL, then reloads: the host sends a signed-out visitor to sign in. */
async function signOutAt(url: string): Promise<void> {
  await fetch(url, { method: 'POST', credentials: 'same-origin' });
  window.location.reload();
}

const chatRoot = document.getElementById('chat-root');
const ordersRoot = document.getElementById('orders-root');

if (chatRoot) {
  const { base, user, signOut, title, orders } = chatRoot.dataset;
  createRoot(chatRoot).render(
    <ChatApp
      {...(base ? { base } : {})}
      {...(user ? { user } : {})}
      {...(title ? { title } : {})}
      {...(orders ? { links: [{ href: orders, label: 'Orders' }] } : {})}
      {...(signOut ? { onSignOut: () => void signOutAt(signOut) } : {})}
    />,
  );
} else if (ordersRoot) {
  const { base, user, signOut, title, orders, chat } = ordersRoot.dataset;
  if (!orders) throw new Error('The orders page needs data-orders (the host’s orders API).');
  createRoot(ordersRoot).render(
    <OrdersPage
      ordersUrl={orders}
      {...(base ? { base } : {})}
      {...(user ? { user } : {})}
      {...(title ? { title } : {})}
      {...(chat ? { chatHref: chat } : {})}
      {...(signOut ? { onSignOut: () => void signOutAt(signOut) } : {})}
    />,
  );
} else {
  throw new Error('The page needs an element with id "chat-root" or "orders-root".');
}
