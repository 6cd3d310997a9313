/**
 * The bundle's entry: renders `ChatApp` into `#chat-root`, configured by the host's HTML shell
 * through data attributes (`data-base`, `data-user`, `data-sign-out`, `data-title`), so the page
 * needs no inline script under its strict CSP.
 */
import { createRoot } from 'react-dom/client';
import { ChatApp } from './chat-app';
import '@service/react/styles.css';
import './chat.css';

const root = document.getElementById('chat-root');
if (!root) throw new Error('The chat page needs an element with id "chat-root".');
const { base, user, signOut, title } = root.dataset;

/** Signs out at the host's sign-out URL, then reloads: the host sends a signed-out visitor to sign in. */
async function signOutAt(url: string): Promise<void> {
  await fetch(url, { method: 'POST', credentials: 'same-origin' });
  window.location.reload();
}

createRoot(root).render(
  <ChatApp
    {...(base ? { base } : {})}
    {...(user ? { user } : {})}
    {...(title ? { title } : {})}
    {...(signOut ? { onSignOut: () => void signOutAt(signOut) } : {})}
  />,
);
