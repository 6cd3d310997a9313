import * as crypto from 'node:crypto';

/** Every platform API key starts with this. */
export const KEY_PREFIX = 'service_sk_';
/** Characters of a key shown in listings: `service_sk_` and five of its own, enough to tell a workspace's keys apart. */
export const DISPLAY_PREFIX_LENGTH = 16;

const KEY_PATTERN = /^service_sk_[A-Za-z0-9_-]{43}$/;

/** Mints a fresh key: `service_sk_` plus 32 random bytes in base64url. Shown once, stored hashed. */
export function mintKey(): string {
  return KEY_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/** True for strings shaped like a key we mint (a cheap filter before any lookup). */
export function isWellFormedKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/** SHA-256 of a secret, lowercase hex: the only form in which keys, tokens and codes are stored. */
export const hashSecret: (secret: string) => string =
  // One call, no hash object to build and feed (Node 20.12 and later): every metered call pays it.
  typeof crypto.hash === 'function'
    ? (secret) => crypto.hash('sha256', secret, 'hex')
    : (secret) => crypto.createHash('sha256').update(secret, 'utf8').digest('hex');

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

/** Constant-time equality of two strings (false, without leaking where, when lengths differ). */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}
