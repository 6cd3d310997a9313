/**
 * Bearer parsing and the API contract's dot-segment rule.
 */

/** The token of an `Authorization: Bearer <token>` header, or null when there is none. */
export function bearerToken(header: string | null | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

const BASE64URL_SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * A token of exactly three base64url segments is a JWT; anything else is an opaque key.
 * (An unsigned `alg: none` JWT has an empty third segment, so it is not a JWT by this rule and
 * fails as an unknown key: it is refused either way.)
 */
export function looksLikeJwt(token: string): boolean {
  const segments = token.split('.');
  return segments.length === 3 && segments.every((s) => BASE64URL_SEGMENT.test(s));
}
