import { describe, expect, it } from 'vitest';
import {
  errorFromAnswer,
  ServiceAuthError,
  ServiceBalanceExhaustedError,
  type ServiceError,
  ServiceNotConnectedError,
  ServiceRateLimitError,
  ServiceSpendCapError,
  ServiceUpstreamError,
  ServiceValidationError,
} from './errors.js';

const canonical = (code: string, extra: Record<string, unknown> = {}) => ({
  error: { code, message: `${code} happened`, ...extra },
});

describe('errorFromAnswer', () => {
  it('picks one class per family from the canonical code', () => {
    const cases: Array<[number, string, new (...args: never[]) => ServiceError]> = [
      [401, 'unauthorized', ServiceAuthError],
      [403, 'forbidden', ServiceAuthError],
      [403, 'tenant_suspended', ServiceAuthError],
      [403, 'not_connected', ServiceNotConnectedError],
      [402, 'balance_exhausted', ServiceBalanceExhaustedError],
      [402, 'spend_cap_exceeded', ServiceSpendCapError],
      [429, 'rate_limited', ServiceRateLimitError],
      [429, 'rate_limit_sse_streams', ServiceRateLimitError],
      [400, 'validation_failed', ServiceValidationError],
      [502, 'upstream_error', ServiceUpstreamError],
    ];
    for (const [status, code, Family] of cases) {
      const error = errorFromAnswer(status, new Headers({ 'service-error-code': code }), canonical(code));
      expect(error, code).toBeInstanceOf(Family);
      expect(error).toMatchObject({ status, code, message: `${code} happened` });
    }
  });

  it('carries retry_after, connect_url, slug, suggested_fix, window and resets_at', () => {
    const error = errorFromAnswer(
      403,
      new Headers({ 'service-error-code': 'not_connected', 'x-request-id': 'req-1' }),
      canonical('not_connected', {
        slug: 'github',
        connect_url: 'https://platform.example/connect/github',
        suggested_fix: 'Connect GitHub',
        retry_after: 3,
      }),
    );
    expect(error).toMatchObject({
      slug: 'github',
      connectUrl: 'https://platform.example/connect/github',
      suggestedFix: 'Connect GitHub',
      retryAfter: 3,
      requestId: 'req-1',
    });
    const cap = errorFromAnswer(
      402,
      new Headers(),
      canonical('spend_cap_exceeded', { window: 'daily', resets_at: '2030-01-02T00:00:00.000Z' }),
    );
    expect(cap).toBeInstanceOf(ServiceSpendCapError);
    expect(cap).toMatchObject({ window: 'daily', resetsAt: '2030-01-02T00:00:00.000Z' });
  });

  it('prefers the Service-Error-Code header to the body code', () => {
    const error = errorFromAnswer(
      402,
      new Headers({ 'service-error-code': 'spend_cap_exceeded' }),
      canonical('balance_exhausted'),
    );
    expect(error).toBeInstanceOf(ServiceSpendCapError);
  });

  it('reads the nested, flat and string shapes, deriving the code from the status', () => {
    const nested = errorFromAnswer(401, new Headers(), { error: { message: 'Invalid or revoked token' } });
    expect(nested).toBeInstanceOf(ServiceAuthError);
    expect(nested).toMatchObject({ code: 'unauthorized', message: 'Invalid or revoked token' });
    const flat = errorFromAnswer(402, new Headers(), {
      message: 'Out of credit',
      code: 'INSUFFICIENT_CREDITS',
    });
    expect(flat).toBeInstanceOf(ServiceBalanceExhaustedError);
    expect(flat).toMatchObject({ code: 'INSUFFICIENT_CREDITS', body: { code: 'INSUFFICIENT_CREDITS' } });
    // Flat codes are kept as sent: callers switch on them.
    const gate = errorFromAnswer(402, new Headers(), {
      message: 'Set up billing',
      code: 'BILLING_NOT_SETUP',
    });
    expect(gate).not.toBeInstanceOf(ServiceBalanceExhaustedError);
    expect(gate).toMatchObject({ status: 402, code: 'BILLING_NOT_SETUP', message: 'Set up billing' });
    const taken = errorFromAnswer(409, new Headers(), { message: 'Slug taken', code: 'SLUG_TAKEN' });
    expect(taken).toMatchObject({ status: 409, code: 'SLUG_TAKEN' });
    const flatAuth = errorFromAnswer(401, new Headers(), { message: 'No session', code: 'UNAUTHENTICATED' });
    expect(flatAuth).toBeInstanceOf(ServiceAuthError);
    expect(flatAuth.code).toBe('UNAUTHENTICATED');
    const text = errorFromAnswer(404, new Headers(), { error: 'Tool not found' });
    expect(text).toMatchObject({ code: 'not_found', message: 'Tool not found' });
    // A method the route does not take, answered without a body (the door's endpoints).
    expect(errorFromAnswer(405, new Headers({ allow: 'POST' }), null)).toMatchObject({
      code: 'method_not_allowed',
    });
    expect(errorFromAnswer(500, new Headers(), 'oops')).toMatchObject({
      code: 'internal_error',
      message: 'HTTP 500',
    });
  });

  it('reads Retry-After in seconds or as a date when the body has no retry_after', () => {
    expect(errorFromAnswer(429, new Headers({ 'retry-after': '17' }), undefined).retryAfter).toBe(17);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const fromDate = errorFromAnswer(429, new Headers({ 'retry-after': inTenSeconds }), undefined).retryAfter;
    expect(fromDate).toBeGreaterThanOrEqual(9);
    expect(fromDate).toBeLessThanOrEqual(11);
  });

  it('reads a fractional Retry-After as seconds rounded up, never as a date long past', () => {
    // `Date.parse('1.5')` is a date in 2001: read so, it would say "come back now".
    expect(errorFromAnswer(503, new Headers({ 'retry-after': '1.5' }), undefined).retryAfter).toBe(2);
    expect(errorFromAnswer(503, new Headers({ 'retry-after': '-1' }), undefined).retryAfter).toBeUndefined();
    expect(
      errorFromAnswer(503, new Headers({ 'retry-after': 'soon' }), undefined).retryAfter,
    ).toBeUndefined();
  });

  it('keeps names and the error chain usable', () => {
    const error = errorFromAnswer(429, new Headers(), undefined);
    expect(error.name).toBe('ServiceRateLimitError');
    expect(error).toBeInstanceOf(Error);
  });
});
