import { Hono } from 'hono';
import { escapeHtml } from '../../http/html.js';
import { layout, pageHeaders } from '../cli/bootstrap-page.js';
import type { PlatformEnv } from '../context.js';
import type { DevMailbox, SentMail } from '../mailer.js';

/**
 * `/dev/mailbox`: the mail the development mailer would have sent, newest first, with its links
 * clickable. Mounted only outside production (there it is the ordinary 404).
 *
 * @see docs/api/members.md "Mail"
 */
export function devMailboxRoutes(mailbox: DevMailbox): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  app.get('/dev/mailbox', (c) => {
    const sent = mailbox.sent();
    const list = sent.length
      ? `<ol id="mail">\n${sent.map(mailItem).join('\n')}\n</ol>`
      : '<p id="empty">No mail sent yet.</p>';
    return c.body(
      layout(
        'Development mailbox',
        `<h1>Development mailbox</h1>
<p class="note">Mail this platform would have sent. Nothing leaves this computer; the list lives in this
process's memory and holds the latest messages only.</p>
${list}`,
      ),
      200,
      pageHeaders(),
    );
  });
  return app;
}

function mailItem(mail: SentMail): string {
  // Escaped first, so a link is made only of text that is already safe in an attribute.
  const text = escapeHtml(mail.text).replace(/https?:\/\/[^\s<>"]+/g, (url) => `<a href="${url}">${url}</a>`);
  return `<li class="message">
<p><strong class="subject">${escapeHtml(mail.subject)}</strong><br>
To <span class="to">${escapeHtml(mail.to)}</span>, ${escapeHtml(mail.sentAt.toISOString())}</p>
<pre>${text}</pre>
</li>`;
}
