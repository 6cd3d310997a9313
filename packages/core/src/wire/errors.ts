/**
 * The wire's error envelope `{ error: { code, message } }` (plus `Service-Error-Code`) and its
 * closed code registry. Every non-2xx wire answer carries one of these codes.
 *
 * @see docs/wire.md "Errors"
 */
import { RunError, type RunErrorCode } from '../agent/run-error.js';
import { BodyCutShortError } from '../http/body.js';
import { type CanonicalErrorFields, canonicalError } from '../http/errors.js';
import { isStoreUnavailable, STORE_RETRY_AFTER_SECONDS } from '../store/availability.js';

export const WIRE_ERROR_CODES = {
  /** 400: the body, query or path failed validation; the message names the field. */
  validation_failed: 400,
  /** 400: the body is not valid JSON. */
  invalid_json: 400,
  /** 400: the path or query has a malformed percent-encoding. */
  malformed_url: 400,
  /** 400: a rebase of an app that is not a remix of a host component. */
  not_a_remix: 400,
  /** 400: the host's principal() returned a subject in the reserved `service:` namespace. */
  principal_reserved: 400,
  /** 400: the host's principal() returned a kind other than `user` (e.g. `org`). */
  principal_kind_refused: 400,
  /** 401: a webhook delivery or scheduler tick failed verification. */
  unauthorized: 401,
  /** 402: organizations or another cloud capability were asked for and are not configured. */
  cloud_required: 402,
  /** 403: the host's principal() returned null: nobody is signed in. */
  principal_required: 403,
  /** 403: a review route asked by someone the composition's `apps.reviewer` does not name. */
  reviewer_required: 403,
  /** 403: an app call its served document has no button for (that tool with that input). */
  app_call_refused: 403,
  /** 403: an app call needs the person's approval and no remembered grant covers it. */
  approval_required: 403,
  /** 404: no such route. */
  route_not_found: 404,
  /** 404: no such thread, run, automation, approval, grant, file, app or slot for this principal. */
  not_found: 404,
  /** 409: the thread already has a run in flight (the body's `run_id` names it). */
  run_in_flight: 409,
  /** 409: a regenerate named a message other than the thread's last. */
  regenerate_not_last: 409,
  /** 409: a text channel address is already bound (to this or another user's thread). */
  channel_address_taken: 409,
  /** 409: an approval in the batch is no longer pending. */
  approval_not_pending: 409,
  /** 409: a rerun of a run no automation started (a chat turn is regenerated instead), or whose automation was deleted. */
  not_rerunnable: 409,
  /** 409: a review decision named a content hash that is no longer the app's current version. */
  review_stale: 409,
  /** 409: the app's current version was already approved or rejected. */
  review_not_pending: 409,
  /** 409: a rebase of a remix already on its component's current seed. */
  not_drifted: 409,
  /** 409: a rebase of a remix whose component no seed names any more. */
  baseline_unknown: 409,
  /** 409: a rebase from a version that is no longer the app's current one. */
  app_moved: 409,
  /** 422: an app document failed its checks; `problems` lists where and why. */
  app_invalid: 422,
  /** 422: a wish of a remix's trail could not be replayed; `replayed`, `failed`, `remaining`, `wish` say which. */
  rebase_failed: 422,
  /** 413: the body is over the limit. */
  payload_too_large: 413,
  /** 416: a download's `Range` starts past the end of the file (`Content-Range` gives its size). */
  range_not_satisfiable: 416,
  /** 415: a state-changing request without `Content-Type: application/json` (CSRF gate). */
  unsupported_media_type: 415,
  /** 500: an unexpected fault; logged with the request id. */
  internal_error: 500,
  /** 500: the host's principal() threw or returned something that is not a principal. */
  principal_failed: 500,
  /** 500: a webhook whose original bytes a body parser mounted before the wire discarded. */
  raw_body_unavailable: 500,
  /** 502: a text channel did not take the text sent through it. */
  channel_send_failed: 502,
  /** 502: the platform behind a `cloud` connections source refused the app's key or did not answer. */
  connections_unavailable: 502,
  /** 502: the host tool behind an app's button failed when run. */
  tool_failed: 502,
  /** 501: the route exists in the contract but is not available in this composition. */
  not_implemented: 501,
  /** 503: the store is unreachable (briefly, as a rule), or the service is stopping; with `Retry-After`. */
  unavailable: 503,
} as const;

export type WireErrorCode = keyof typeof WIRE_ERROR_CODES;

/** An error that crosses the wire: its code picks the status. */
export class WireError extends Error {
  override name = 'WireError';
  readonly status: number;
  constructor(
    readonly code: WireErrorCode,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string>; fields?: CanonicalErrorFields },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.status = WIRE_ERROR_CODES[code];
    this.headers = options?.headers ?? {};
    this.fields = options?.fields ?? {};
  }
  readonly headers: Record<string, string>;
  /** Extra envelope fields beside `code` and `message` (`run_id` of a `run_in_flight`). */
  readonly fields: CanonicalErrorFields;
}

/** The envelope for `code`, with the `Service-Error-Code` header. */
export function wireError(
  code: WireErrorCode,
  message: string,
  headers: Record<string, string> = {},
  fields: CanonicalErrorFields = {},
): Response {
  return canonicalError(WIRE_ERROR_CODES[code], code, message, fields, headers);
}

/** What a 503 of an unreachable store carries: when to try again. */
export const UNAVAILABLE_HEADERS: Readonly<Record<string, string>> = {
  'retry-after': String(STORE_RETRY_AFTER_SECONDS),
};

/** The wire's code for each refusal of the agent. */
const RUN_ERROR_CODES: Record<RunErrorCode, WireErrorCode> = {
  run_in_flight: 'run_in_flight',
  regenerate_not_last: 'regenerate_not_last',
  not_found: 'not_found',
  // A client's mistake in the body, as a field that fails validation is.
  message_id_taken: 'validation_failed',
  stopping: 'unavailable',
};

/**
 * The error as the wire answers it: a `WireError` as it is, an agent's refusal under its wire
 * code, a database that cannot be reached as `unavailable` (503 with `Retry-After`), anything
 * else null (an unexpected fault).
 */
export function asWireError(error: unknown): WireError | null {
  if (error instanceof WireError) return error;
  if (error instanceof RunError) {
    const code = RUN_ERROR_CODES[error.code];
    const headers = code === 'unavailable' ? UNAVAILABLE_HEADERS : {};
    const fields = error.runId ? { run_id: error.runId } : {};
    return new WireError(code, error.message, { cause: error, headers, fields });
  }
  // Before the store's check: the socket's error it carries reads like the store's.
  if (error instanceof BodyCutShortError) {
    return new WireError('validation_failed', 'body: the request broke off before its end.', {
      cause: error,
    });
  }
  if (isStoreUnavailable(error)) {
    return new WireError('unavailable', 'The service is briefly unavailable; try again shortly.', {
      cause: error,
      headers: UNAVAILABLE_HEADERS,
    });
  }
  return null;
}
