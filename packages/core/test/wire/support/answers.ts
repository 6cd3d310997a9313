/**
 * Assertions on wire answers for the suites. Kept apart from `wire.ts` because that module also
 * runs in child processes (`delete-mid-stream.ts`), where vitest cannot be imported.
 */
import { expect } from 'vitest';

/** `response`'s JSON body; its status must be `status` (the body is shown when it is not). */
export async function jsonOf(response: Response, status: number) {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return JSON.parse(body);
}

/** `response`'s wire error: `status`, with `code` in the body and in the `Service-Error-Code` header. */
export async function wireErrorOf(response: Response, status: number, code: string) {
  const body = await jsonOf(response, status);
  expect(body.error.code).toBe(code);
  expect(response.headers.get('service-error-code')).toBe(code);
  return body.error;
}
