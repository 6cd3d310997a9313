import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (connection credentials, managed-pool keys): AES-256-GCM with associated data
 * naming the row, so a sealed value copied into another row does not open.
 *
 * Sealed form: `v1.<key id>.<iv>.<ciphertext+tag>` (base64url parts). The key id is the first 8 hex
 * characters of the key's SHA-256, so several keys can be configured while rotating: the first
 * seals, any of them opens.
 *
 * @see docs/storage.md "Secrets"
 */
export interface Sealer {
  seal(plaintext: string, associatedData: string): string;
  /** The plaintext, or an error when the value was not sealed by a configured key for this row. */
  open(sealed: string, associatedData: string): string;
}

export class SealingError extends Error {
  override name = 'SealingError';
  readonly code = 'ERR_SERVICE_SEALING';
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Reads `SERVICE_STORE_ENCRYPTION_KEY`: one or more comma-separated base64 keys of 32 bytes. */
export function parseEncryptionKeys(value: string): Buffer[] {
  const keys = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => Buffer.from(part, 'base64'));
  if (keys.length === 0 || keys.some((key) => key.length !== 32)) {
    throw new SealingError(
      'SERVICE_STORE_ENCRYPTION_KEY must be base64 of 32 bytes (several may be comma-separated)',
    );
  }
  return keys;
}

/** A fresh key in the form `SERVICE_STORE_ENCRYPTION_KEY` takes. */
export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}

export function createSealer(keys: Buffer[]): Sealer {
  if (keys.length === 0) throw new SealingError('A sealer needs at least one key');
  const byId = new Map(keys.map((key) => [keyIdOf(key), key]));
  const [primary] = keys as [Buffer];
  const primaryId = keyIdOf(primary);
  return {
    seal(plaintext, associatedData) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', primary, iv);
      cipher.setAAD(Buffer.from(associatedData, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return [VERSION, primaryId, iv.toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed, associatedData) {
      const [version, keyId, ivPart, bodyPart, ...rest] = sealed.split('.');
      const key = keyId ? byId.get(keyId) : undefined;
      if (version !== VERSION || !key || !ivPart || !bodyPart || rest.length > 0) {
        throw new SealingError('Sealed value is malformed or sealed by a key that is not configured');
      }
      const body = Buffer.from(bodyPart, 'base64url');
      if (body.length < TAG_BYTES) throw new SealingError('Sealed value is truncated');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(ivPart, 'base64url'));
        decipher.setAAD(Buffer.from(associatedData, 'utf8'));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        return Buffer.concat([
          decipher.update(body.subarray(0, body.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch (error) {
        throw new SealingError('Sealed value does not open with this key and row', { cause: error });
      }
    },
  };
}

function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}
