import type { Context } from 'hono';
import { BodyTooLargeError, type FormFields, readFormFields } from '../../http/body.js';
import { isCrossOrigin } from '../../identity/session-cookie.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/** A page's form post: its fields, or why it is refused (for the page to say in its own words). */
export type PageForm =
  | { ok: true; fields: FormFields }
  | { ok: false; status: 403 | 413; title: string; message: string };

/**
 * Reads the form a platform page posts back: at most `maxBytes`, and only from this origin (a
 * cross-site form must not act for the signed-in user). Checking a CSRF token is the caller's.
 */
export async function readPageForm(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  maxBytes: number,
): Promise<PageForm> {
  let fields: FormFields;
  try {
    fields = await readFormFields(c.req.raw, { maxBytes });
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    return { ok: false, status: 413, title: 'Request too large', message: 'The form sent too much data.' };
  }
  if (isCrossOrigin(c.req.header('origin'), ctx.baseUrl, c.req.url)) {
    return { ok: false, status: 403, title: 'Request refused', message: 'Cross-origin request refused.' };
  }
  return { ok: true, fields };
}
