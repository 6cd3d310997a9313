import { describe, expect, it } from 'vitest';
import { safeReturnTo } from './return-to.js';

describe('safeReturnTo', () => {
  it('keeps same-origin paths, as a URL parser writes them', () => {
    for (const path of ['/', '/api/auth/me', '/dashboard?tab=keys#top', '/%2F%2Fevil.example']) {
      expect(safeReturnTo(path)).toBe(path);
    }
    expect(safeReturnTo('/a/b/../c')).toBe('/a/c');
    expect(safeReturnTo('/./billing?purchase=1')).toBe('/billing?purchase=1');
  });

  it('turns anything that could leave the origin into /', () => {
    for (const value of [
      undefined,
      null,
      42,
      ['/x'],
      '',
      'dashboard',
      '//evil.example',
      '///evil.example',
      '/\\evil.example',
      '/./\\evil.example',
      '/..//evil.example',
      '/a/../..//evil.example',
      '\\\\evil.example',
      'https://evil.example/',
      'javascript:alert(1)',
      '/\t/evil.example',
      '/\n/evil.example',
      ' //evil.example',
      `/${'a'.repeat(5000)}`,
    ]) {
      expect(safeReturnTo(value), JSON.stringify(value)).toBe('/');
    }
  });
});
