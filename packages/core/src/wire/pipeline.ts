/**
 * The checks every wire request passes before its route, in order: the base path, the URL's
 * percent-encoding, and the JSON gate (CSRF defence) with its four exceptions.
 *
 * @see docs/wire.md "Request pipeline"
 */
import { urlProblem } from '../http/input-guard.js';
import { BASE_PATH } from './context.js';
import { WireError } from './errors.js';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Header a file upload carries instead of a JSON content type (forms cannot set headers):
 * `raw` (the body is the file) or `multipart` (multipart/form-data, the file in field `file`).
 */
export const RAW_UPLOAD_HEADER = 'x-service-upload';
const UPLOAD_MODES = new Set(['raw', 'multipart']);
/** Media type of an app import (forms cannot send it). */
export const APP_IMPORT_MEDIA_TYPE = 'application/vnd.service.app+json';

/** The path under the base path (`/threads`), or null when the request is not for the wire. */
export function wirePath(pathname: string): string | null {
  if (pathname === BASE_PATH) return '/';
  return pathname.startsWith(`${BASE_PATH}/`) ? pathname.slice(BASE_PATH.length) : null;
}

/**
 * 400 for a path or query whose percent-encoding does not decode (`malformed_url`), or whose
 * decoded text holds a NUL (`validation_failed`): the shared input guard, before any route.
 */
export function checkEncoding(url: URL): void {
  const problem = urlProblem(url);
  if (!problem) return;
  if (problem.includes('percent-encoding')) {
    throw new WireError('malformed_url', 'The URL has a malformed percent-encoding.');
  }
  throw new WireError('validation_failed', `${problem[0]!.toUpperCase()}${problem.slice(1)}.`);
}

/**
 * Which of the four exceptions a request is, if any. Each proves itself another way than the
 * JSON content type, in a way a cross-site form cannot forge:
 *
 * 1. file upload `POST /files` carries `X-Service-Upload: raw|multipart` (a custom header forces a preflight);
 * 2. app import `POST /apps/import` carries `Content-Type: application/vnd.service.app+json`;
 * 3. scheduler tick `POST /tick` is verified by its bearer secret;
 * 4. webhook delivery `POST /webhooks/:source` is verified by its signature.
 */
export function gateException(method: string, path: string, headers: Headers): string | null {
  if (method !== 'POST') return null;
  if (path === '/files' && UPLOAD_MODES.has(headers.get(RAW_UPLOAD_HEADER)?.toLowerCase() ?? '')) {
    return 'file-upload';
  }
  if (path === '/apps/import' && mediaType(headers) === APP_IMPORT_MEDIA_TYPE) return 'app-import';
  if (path === '/tick') return 'tick';
  if (/^\/webhooks\/[^/]+$/.test(path)) return 'webhook';
  return null;
}

/**
 * The JSON gate: a state-changing request (DELETE too, even without a body) must say
 * `Content-Type: application/json`, which a cross-site form cannot send without a preflight.
 */
export function checkJsonGate(method: string, path: string, headers: Headers): void {
  if (!STATE_CHANGING.has(method)) return;
  if (gateException(method, path, headers)) return;
  if (mediaType(headers) !== 'application/json') {
    throw new WireError(
      'unsupported_media_type',
      `${method} requests must send Content-Type: application/json (also DELETE, even without a body).`,
    );
  }
}

function mediaType(headers: Headers): string {
  return (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}
