/**
 * Reading OAuth form bodies (`application/x-www-form-urlencoded`) and JSON registration bodies
 * with a size cap, under the shared input guard's text rule, so bad input is a clear 400 (or
 * 413) in OAuth's terms, never a 500.
 */
import { readBodyText } from '../../http/body.js';
import { textProblem } from '../../http/input-guard.js';
import { OAuthError } from './errors.js';

/** OAuth requests are a handful of short fields. */
export const MAX_FORM_BYTES = 16 * 1024;

export function isFormRequest(request: Request): boolean {
  const type = request.headers.get('content-type') ?? '';
  return type.split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';
}

/**
 * The form fields, or an `invalid_request` OAuthError for another content type, an oversized body
 * or a field the store cannot hold.
 */
export async function readForm(request: Request): Promise<URLSearchParams> {
  if (!isFormRequest(request)) {
    throw new OAuthError('invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const form = new URLSearchParams(await readCapped(request, MAX_FORM_BYTES));
  const unstorable = unstorableField(form);
  if (unstorable !== null)
    throw new OAuthError('invalid_request', `${unstorable} contains a NUL character or invalid Unicode`);
  return form;
}

/**
 * Text the store can hold: no NUL character, no unpaired surrogate (the shared input guard's
 * rule, `http/input-guard.ts`), so a value carrying one is refused before it reaches a query.
 */
export function isStorableText(value: string): boolean {
  return textProblem(value) === null;
}

/** The name of the first parameter whose name or value the store cannot hold, or null. */
export function unstorableField(params: URLSearchParams): string | null {
  for (const [name, value] of params) {
    if (!isStorableText(name)) return 'A parameter name';
    if (!isStorableText(value)) return name;
  }
  return null;
}

/** One value of a field; a repeated field is refused (RFC 6749 §3.1: parameters must not repeat). */
export function single(form: URLSearchParams, name: string): string | null {
  const values = form.getAll(name);
  if (values.length > 1) throw new OAuthError('invalid_request', `${name} must not be repeated`);
  const value = values[0];
  return value === undefined || value === '' ? null : value;
}

/** A body read with the one capped reader, refused in OAuth's terms when it is too large. */
export async function readCapped(request: Request, maxBytes: number): Promise<string> {
  return readBodyText(request, {
    maxBytes,
    tooLarge: () => new OAuthError('invalid_request', 'Request body too large', 413),
    notUtf8: () => new OAuthError('invalid_request', 'Request body must be UTF-8 text'),
  });
}
