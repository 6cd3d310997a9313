/**
 * Reading OAuth form bodies (`application/x-www-form-urlencoded`) and JSON registration bodies
 * with a size cap, so bad input is a clear 400 (or 413), never a 500.
 */
import { OAuthError } from './oauth-error.js';

/** OAuth requests are a handful of short fields. */
export const MAX_FORM_BYTES = 16 * 1024;

export function isFormRequest(request: Request): boolean {
  const type = request.headers.get('content-type') ?? '';
  return type.split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';
}

/** The form fields, or an `invalid_request` OAuthError for another content type or an oversized body. */
export async function readForm(request: Request): Promise<URLSearchParams> {
  if (!isFormRequest(request)) {
    throw new OAuthError('invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const text = await readCapped(request, MAX_FORM_BYTES);
  return new URLSearchParams(text);
}

/** One value of a field; a repeated field is refused (RFC 6749 §3.1: parameters must not repeat). */
export function single(form: URLSearchParams, name: string): string | null {
  const values = form.getAll(name);
  if (values.length > 1) throw new OAuthError('invalid_request', `${name} must not be repeated`);
  const value = values[0];
  return value === undefined || value === '' ? null : value;
}

export async function readCapped(request: Request, maxBytes: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > maxBytes) throw new OAuthError('invalid_request', 'Request body too large', 413);
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new OAuthError('invalid_request', 'Request body too large', 413);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
