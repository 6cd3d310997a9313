import { randomUUID } from 'node:crypto';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** An inbound `X-Request-Id` when it is short and plain (no log injection), else a fresh one. */
export function requestIdFor(request: Request): string {
  return requestIdOf(request.headers.get('x-request-id'));
}

/** `requestIdFor` from the inbound header's value. */
export function requestIdOf(inbound: string | null | undefined): string {
  return inbound && SAFE_REQUEST_ID.test(inbound) ? inbound : randomUUID();
}
