import { describe, expect, it } from 'vitest';
import { bearerToken, looksLikeJwt } from './bearer.js';

describe('bearerToken', () => {
  it('extracts the token of a Bearer header, case-insensitively', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc ')).toBe('abc');
  });
  it('returns null for missing, empty, other-scheme or multi-part values', () => {
    for (const value of [null, undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer a b', 'Bearerabc']) {
      expect(bearerToken(value)).toBeNull();
    }
  });
});

describe('looksLikeJwt (the dot-segment rule)', () => {
  it('treats exactly three base64url segments as a JWT', () => {
    expect(looksLikeJwt('aa.bb.cc')).toBe(true);
    expect(looksLikeJwt('a-_.b.c')).toBe(true);
  });
  it('treats everything else as an opaque key', () => {
    for (const value of ['service_sk_abc', 'a.b', 'a.b.c.d', 'a.b.', 'a..c', 'a.b.c=', 'a.b+.c']) {
      expect(looksLikeJwt(value)).toBe(false);
    }
  });
});
