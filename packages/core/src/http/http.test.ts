import { describe, expect, it } from 'vitest';
import { clientIp } from './client-ip.js';
import { corsHeaders, isOwnOrigin, ownDomainOf } from './cors.js';
import { canonicalError, flatError, nestedError, stringError } from './errors.js';
import { requestIdFor } from './request-id.js';

describe('clientIp', () => {
  const request = (xff?: string) =>
    new Request('http://x/', { headers: xff ? { 'x-forwarded-for': xff } : {} });

  it('uses the socket address and ignores X-Forwarded-For by default', () => {
    expect(clientIp(request('1.2.3.4'), { remoteAddress: '10.0.0.9' })).toBe('10.0.0.9');
    expect(clientIp(request(), { incoming: { socket: { remoteAddress: '::ffff:127.0.0.1' } } })).toBe(
      '127.0.0.1',
    );
    expect(clientIp(request(), undefined)).toBe('unknown');
  });

  it('takes the entry appended by the outermost trusted proxy', () => {
    expect(clientIp(request('6.6.6.6, 1.2.3.4'), { remoteAddress: '10.0.0.9' }, { trustedProxies: 1 })).toBe(
      '1.2.3.4',
    );
    expect(
      clientIp(request('6.6.6.6, 1.2.3.4, 10.0.0.8'), { remoteAddress: '10.0.0.9' }, { trustedProxies: 2 }),
    ).toBe('1.2.3.4');
    expect(clientIp(request(), { remoteAddress: '10.0.0.9' }, { trustedProxies: 1 })).toBe('10.0.0.9');
  });

  it('falls back to the socket when the trusted entry is not an address', () => {
    const junk = 'x'.repeat(10_000);
    expect(clientIp(request(`1.2.3.4, ${junk}`), { remoteAddress: '10.0.0.9' }, { trustedProxies: 1 })).toBe(
      '10.0.0.9',
    );
    expect(clientIp(request('::ffff:1.2.3.4'), { remoteAddress: '10.0.0.9' }, { trustedProxies: 1 })).toBe(
      '1.2.3.4',
    );
  });
});

describe('CORS policy', () => {
  it('derives the own domain from the base URL', () => {
    expect(ownDomainOf('https://api.example.com')).toBe('example.com');
    expect(ownDomainOf('https://example.com')).toBe('example.com');
    expect(ownDomainOf('http://localhost:8787')).toBe('localhost');
    expect(ownDomainOf('http://127.0.0.1:8787')).toBe('127.0.0.1');
    expect(ownDomainOf('https://api.example.co.uk', 'example.co.uk')).toBe('example.co.uk');
  });

  it('matches the domain and its subdomains only', () => {
    const policy = { ownDomain: 'example.com' };
    expect(isOwnOrigin('https://example.com', policy)).toBe(true);
    expect(isOwnOrigin('https://a.b.example.com', policy)).toBe(true);
    expect(isOwnOrigin('https://evilexample.com', policy)).toBe(false);
    expect(isOwnOrigin('https://example.com.evil.net', policy)).toBe(false);
    expect(isOwnOrigin('null', policy)).toBe(false);
    expect(isOwnOrigin('ftp://example.com', policy)).toBe(false);
  });

  it('reflects own origins and gives * to others, always varying on Origin and exposing Retry-After', () => {
    const policy = { ownDomain: 'example.com' };
    const exposed = { 'access-control-expose-headers': 'Retry-After', vary: 'Origin' };
    expect(corsHeaders('https://app.example.com', policy)).toEqual({
      'access-control-allow-origin': 'https://app.example.com',
      ...exposed,
    });
    expect(corsHeaders('https://other.net', policy)).toEqual({
      'access-control-allow-origin': '*',
      ...exposed,
    });
    expect(corsHeaders(null, policy)).toEqual({ 'access-control-allow-origin': '*', ...exposed });
  });
});

describe('error bodies', () => {
  it('builds the canonical, nested, flat and string shapes', async () => {
    const canonical = canonicalError(429, 'rate_limit_sse_streams', 'Too many', { retry_after: 5 });
    expect(canonical.headers.get('service-error-code')).toBe('rate_limit_sse_streams');
    expect(await canonical.json()).toEqual({
      error: { code: 'rate_limit_sse_streams', message: 'Too many', retry_after: 5 },
    });
    expect(await nestedError(401, 'Missing Bearer token').json()).toEqual({
      error: { message: 'Missing Bearer token' },
    });
    expect(await flatError(402, 'No credit', { code: 'INSUFFICIENT_CREDITS' }).json()).toEqual({
      message: 'No credit',
      code: 'INSUFFICIENT_CREDITS',
    });
    expect(await stringError(404, 'Tool not found').json()).toEqual({ error: 'Tool not found' });
  });
});

describe('requestIdFor', () => {
  it('keeps a plain inbound id and replaces anything that could forge a log line', () => {
    expect(requestIdFor(new Request('http://x/', { headers: { 'x-request-id': 'abc-123' } }))).toBe(
      'abc-123',
    );
    const forged = requestIdFor(
      new Request('http://x/', { headers: { 'x-request-id': 'a"} {"level":"error' } }),
    );
    expect(forged).toMatch(/^[0-9a-f-]{36}$/);
  });
});
