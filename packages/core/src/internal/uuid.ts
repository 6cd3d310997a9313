import { createHash } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID in its canonical text form (so a query against a uuid column cannot fail on it). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * A UUID read off a SHA-256 of `text`: the same text, the same id. RFC 9562 version 8 (custom)
 * with the RFC variant bits, so it parses as an ordinary UUID.
 */
export function uuidOfText(text: string): string {
  const bytes = createHash('sha256').update(text).digest();
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
