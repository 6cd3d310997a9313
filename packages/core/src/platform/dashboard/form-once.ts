import { randomUUID } from 'node:crypto';
import { html, type SafeHtml } from '../../http/html.js';
import type { IdempotencyScope } from '../../store/idempotency.js';
import { releaseRecord } from '../internal/idempotency.js';
import { type ActionResult, field, type PageView } from './page.js';

/**
 * A form whose answer shows something once (a new key, an invitation link) acts once: reloading
 * that answer makes the browser send the form again, which would mint another key or replace the
 * invitation just shown. The form carries a one-time nonce; sent again, it does nothing and is
 * answered `409` with `again`, the form's own words.
 *
 * @see docs/dashboard.md "A form's answer"
 */
export function onceInput(): SafeHtml {
  return html`<input type="hidden" name="nonce" value="${randomUUID()}">`;
}

/**
 * Runs `act` once for the form's nonce (`form` names the form, as `/keys create`): a nonce already
 * used answers `again` (409) and runs nothing. A refusal or an error releases the nonce, so the
 * form sent again after a fix acts. A post without a usable nonce (not from these pages) acts as
 * the API would.
 */
export async function oncePerForm(
  view: PageView,
  fields: Record<string, string>,
  form: string,
  again: string,
  act: () => Promise<ActionResult>,
): Promise<ActionResult> {
  const once = formOnce(view, form, field(fields, 'nonce'));
  if (!once) return act();
  if (!(await view.ctx.idempotency.reserve(once, ''))) return { refused: again, status: 409 };
  // Released when the store is away (the form answers 503) as soon as it is back, so the form sent
  // again acts rather than being taken for a repeat.
  const release = () => releaseRecord(view.ctx, once);
  try {
    const result = await act();
    if ('refused' in result) await release();
    else await view.ctx.idempotency.complete(once, { status: 200, body: '{}' });
    return result;
  } catch (error) {
    await release();
    throw error;
  }
}

/** The record that lets one form act once; null for a post without a usable nonce. */
function formOnce(view: PageView, form: string, nonce: string): IdempotencyScope | null {
  if (!/^[\w-]{1,64}$/.test(nonce)) return null;
  const user = view.user!;
  return { tenantId: user.tenantId, scope: `dashboard ${form} user:${user.userId}`, key: nonce };
}
