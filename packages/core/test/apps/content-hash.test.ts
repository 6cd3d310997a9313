import { describe, expect, it } from 'vitest';
import { contentHash } from '../../src/apps/content-hash.js';
import type { AppDocument } from '../../src/apps/document.js';
import { validGoodDocument } from './fixtures.js';

/** The same JSON with every object's keys reversed. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([key, child]) => [key, reversed(child)]),
    );
  }
  return value;
}

describe('contentHash', () => {
  it('is the same for the same document in any key order', () => {
    const document = validGoodDocument();
    const shuffled = reversed(document) as AppDocument;
    expect(JSON.stringify(shuffled)).not.toBe(JSON.stringify(document));
    expect(contentHash(shuffled)).toBe(contentHash(document));
    expect(contentHash(document)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes with any change of content, array order included', () => {
    const document = validGoodDocument();
    const retitled = { ...document, title: 'Orders!' };
    const children = [...(document.root.children ?? [])].reverse();
    const reordered = { ...document, root: { ...document.root, children } };
    expect(contentHash(retitled)).not.toBe(contentHash(document));
    expect(contentHash(reordered)).not.toBe(contentHash(document));
  });
});
