import { createHash, randomBytes } from 'node:crypto';
import { hashSecret, safeEqual } from '../identity/keys.js';

/**
 * Door secrets: `prefix_` plus 32 random bytes in base64url. Only `hashSecret()` of each is
 * stored, so a leaked database yields no usable code, token, transaction or session.
 */
export const SECRET_PREFIX = {
  code: 'mcp_code_',
  access: 'mcp_at_',
  refresh: 'mcp_rt_',
  transaction: 'mcp_tx_',
  csrf: 'mcp_csrf_',
  session: 'mcp_ses_',
  client: 'mcp_client_',
} as const;

export function mintSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export { hashSecret, safeEqual };

/** RFC 7636 §4.1: 43 to 128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 challenge is the base64url SHA-256 of the verifier: exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function isWellFormedVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier);
}

export function isWellFormedChallenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge);
}

/** True when `verifier` hashes to `challenge` under S256, compared in constant time. @see RFC 7636 §4.6 */
export function verifiesS256(verifier: string, challenge: string): boolean {
  return safeEqual(createHash('sha256').update(verifier, 'ascii').digest('base64url'), challenge);
}

/** `svc:<hash8>`: how calls made with a service key are attributed (first 8 hex of its SHA-256). */
export function serviceActor(key: string): string {
  return `svc:${hashSecret(key).slice(0, 8)}`;
}
