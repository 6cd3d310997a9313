import { describe, expect, it } from 'vitest';
import { createSealer, generateEncryptionKey, parseEncryptionKeys, SealingError } from './sealing.js';

describe('sealing', () => {
  const key = generateEncryptionKey();
  const sealer = createSealer(parseEncryptionKeys(key));

  it('opens what it sealed for the same row, and the sealed form hides the plaintext', () => {
    const sealed = sealer.seal('sk-live-123', 'connection:1');
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(sealed).not.toContain('sk-live-123');
    expect(sealer.open(sealed, 'connection:1')).toBe('sk-live-123');
    expect(sealer.seal('sk-live-123', 'connection:1')).not.toBe(sealed);
  });

  it('refuses a value moved to another row, tampered with, or sealed by an unknown key', () => {
    const sealed = sealer.seal('secret', 'connection:1');
    expect(() => sealer.open(sealed, 'connection:2')).toThrow(SealingError);
    // The ciphertext's first character: all six of its bits are data (a last character may
    // carry only padding bits, and changing those changes no byte).
    const at = sealed.lastIndexOf('.') + 1;
    const tampered = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    expect(() => sealer.open(tampered, 'connection:1')).toThrow(SealingError);
    const other = createSealer(parseEncryptionKeys(generateEncryptionKey()));
    expect(() => other.open(sealed, 'connection:1')).toThrow(SealingError);
    expect(() => sealer.open('garbage', 'connection:1')).toThrow(SealingError);
  });

  it('opens values sealed by an older key while sealing with the first', () => {
    const newKey = generateEncryptionKey();
    const rotated = createSealer(parseEncryptionKeys(`${newKey},${key}`));
    const old = sealer.seal('old secret', 'row');
    expect(rotated.open(old, 'row')).toBe('old secret');
    expect(() => sealer.open(rotated.seal('new', 'row'), 'row')).toThrow(SealingError);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => parseEncryptionKeys('c2hvcnQ=')).toThrow(/32 bytes/);
    expect(() => parseEncryptionKeys(' , ')).toThrow(SealingError);
  });
});
