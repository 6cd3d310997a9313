import { isUtf8 } from 'node:buffer';
import type { Context } from 'hono';
import { BodyTooLargeError, type FormFields, readBody, readFormFields } from '../../http/body.js';
import { isCrossOrigin } from '../../identity/session-cookie.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/**
 * A form's text the store cannot keep, said in words a person reads: bytes that are not UTF-8
 * (refused here, whole) or a NUL character in a field (refused before the API is called, after
 * the page's own checks of the fields it knows).
 */
export const FORM_TEXT_NOT_KEPT =
  'The form holds characters that cannot be kept (text that is not UTF-8, or a NUL character). Nothing was changed: remove them and send the form again.';

/** A page's form post: its fields, or why it is refused (for the page to say in its own words). */
export type PageForm =
  | { ok: true; fields: FormFields }
  | { ok: false; status: 400 | 403 | 413; title: string; message: string };

/**
 * Reads the form a platform page posts back: at most `maxBytes`, and only from this origin (a
 * cross-site form must not act for the signed-in user). Checking a CSRF token is the caller's.
 * Bytes that are not UTF-8 (raw or percent-encoded) refuse the form whole, in words a person
 * reads, rather than being stored as U+FFFD in their place.
 */
export async function readPageForm(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  maxBytes: number,
): Promise<PageForm> {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await readBody(c.req.raw, { maxBytes });
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    return { ok: false, status: 413, title: 'Request too large', message: 'The form sent too much data.' };
  }
  if (isCrossOrigin(c.req.header('origin'), ctx.baseUrl, c.req.url)) {
    return { ok: false, status: 403, title: 'Request refused', message: 'Cross-origin request refused.' };
  }
  const notKept = { ok: false, status: 400, title: 'Request refused', message: FORM_TEXT_NOT_KEPT } as const;
  // A urlencoded form's values are percent-decoded: their bytes must be UTF-8 too.
  const urlencoded = /^application\/x-www-form-urlencoded\b/i.test(c.req.header('content-type') ?? '');
  if (!isUtf8(bytes) || (urlencoded && !percentEncodedUtf8(bytes))) return notKept;
  const fields = await readFormFields(
    { headers: c.req.raw.headers, body: new Blob([bytes]).stream() },
    { maxBytes },
  );
  return { ok: true, fields };
}

/** Whether every run of percent-encoded bytes in the body decodes as UTF-8 (`%FF` does not). */
function percentEncodedUtf8(bytes: Uint8Array): boolean {
  const runs =
    Buffer.from(bytes)
      .toString('latin1')
      .match(/(?:%[0-9A-Fa-f]{2})+/g) ?? [];
  return runs.every((run) => {
    try {
      decodeURIComponent(run);
      return true;
    } catch {
      return false;
    }
  });
}
