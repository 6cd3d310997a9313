/**
 * The API contract's three error body shapes. Each route answers with exactly one of them.
 */

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' } as const;

export interface CanonicalErrorFields {
  slug?: string;
  retry_after?: number;
  connect_url?: string;
  suggested_fix?: string;
  /** Spend caps: the window that tripped and when it resets (ISO 8601). */
  window?: 'daily' | 'monthly';
  resets_at?: string;
  /** The embedded wire: the run a `run_in_flight` refusal is about. */
  run_id?: string;
  /** The embedded wire: why an app document was refused (`app_invalid`), each `{ path, message }`. */
  problems?: { path: string; message: string }[];
  /** The embedded wire: where a rebase's replay stopped (`rebase_failed`), and the wish that failed. */
  replayed?: number;
  failed?: number;
  remaining?: number;
  wish?: string;
}

/** `{ error: { code, message, ...fields } }` plus the `Service-Error-Code` header. */
export function canonicalError(
  status: number,
  code: string,
  message: string,
  fields: CanonicalErrorFields = {},
  headers: HeadersInit = {},
): Response {
  const merged = withJson(headers);
  merged.set('service-error-code', code);
  // The platform's own answer wherever it is sent, under `/proxy/` too, where a provider's
  // answers pass with the headers the provider chose.
  merged.set('x-content-type-options', 'nosniff');
  return jsonResponse({ error: { code, message, ...fields } }, status, merged);
}

/** `{ error: { message } }`, used by the balance endpoints and the runtime connections list. */
export function nestedError(status: number, message: string, headers: HeadersInit = {}): Response {
  return jsonResponse({ error: { message } }, status, withJson(headers));
}

/** `{ message }`, optionally with a SCREAMING_SNAKE `code` and extra fields (dashboard routes). */
export function flatError(
  status: number,
  message: string,
  extra: { code?: string } & Record<string, unknown> = {},
  headers: HeadersInit = {},
): Response {
  return jsonResponse({ message, ...extra }, status, withJson(headers));
}

/** `{ error: "<message>" }`, used by tool detail routes and a few dashboard mutations. */
export function stringError(status: number, message: string, headers: HeadersInit = {}): Response {
  return jsonResponse({ error: message }, status, withJson(headers));
}

function withJson(headers: HeadersInit): Headers {
  const merged = new Headers(headers);
  merged.set('content-type', JSON_HEADERS['content-type']);
  return merged;
}

/**
 * A JSON response from a string body. (`Response.json()` builds a streamed body, which the Node
 * adapter must read back chunk by chunk; a string body is written in one go.)
 */
function jsonResponse(body: unknown, status: number, headers: Headers): Response {
  return new Response(JSON.stringify(body), { status, headers });
}

/** The error body shapes of the API contract: canonical, nested, flat, and `{ error: <string> }` (`string`). */
export type ErrorShape = 'canonical' | 'nested' | 'flat' | 'string';

/** Answers that must never be cached: credentials, balances, anything per caller. */
export const NO_STORE = { 'cache-control': 'no-store' } as const;
