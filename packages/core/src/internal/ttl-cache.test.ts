import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache.js';

describe('TtlCache', () => {
  it('serves an entry until its expiry and drops it when read after', () => {
    let now = 1_000;
    const cache = new TtlCache<string, number>({ ttlMs: 100, now: () => now });
    cache.set('a', 1);
    now += 99;
    expect(cache.get('a')).toBe(1);
    expect(cache.has('a')).toBe(true);
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('caches null as an answer, distinct from a miss', () => {
    const cache = new TtlCache<string, string | null>({ ttlMs: 1000 });
    cache.set('gone', null);
    expect(cache.get('gone')).toBeNull();
    expect(cache.get('never')).toBeUndefined();
  });

  it('gives an entry its own lifetime, and caches nothing for a lifetime of zero or less', () => {
    let now = 0;
    const cache = new TtlCache<string, string>({ ttlMs: 1000, now: () => now });
    cache.set('short', 'x', 10);
    cache.set('stale', 'y');
    cache.set('stale', 'z', 0);
    expect(cache.get('stale')).toBeUndefined();
    now = 10;
    expect(cache.get('short')).toBeUndefined();
    expect(new TtlCache<string, string>({ ttlMs: 0 }).get('k')).toBeUndefined();
    const off = new TtlCache<string, string>({ ttlMs: 0 });
    off.set('k', 'v');
    expect(off.size).toBe(0);
  });

  it('drops the entry written longest ago when full', () => {
    const cache = new TtlCache<string, number>({ ttlMs: 1000, maxEntries: 2 });
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 3);
    cache.set('c', 4);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(3);
    expect(cache.get('c')).toBe(4);
    expect(cache.size).toBe(2);
  });

  it('deletes one key, the keys whose values match, or everything', () => {
    const cache = new TtlCache<string, { owner: string }>({ ttlMs: 1000 });
    cache.set('h1', { owner: 'k1' });
    cache.set('h2', { owner: 'k1' });
    cache.set('h3', { owner: 'k2' });
    expect(cache.delete('h3')).toBe(true);
    expect(cache.delete('h3')).toBe(false);
    cache.set('h3', { owner: 'k2' });
    cache.deleteWhere((value) => value.owner === 'k1');
    expect([cache.get('h1'), cache.get('h2'), cache.get('h3')]).toEqual([
      undefined,
      undefined,
      { owner: 'k2' },
    ]);
    cache.clear();
    expect(cache.size).toBe(0);
  });
  it('keeps an expired entry for stale() only, within staleMs, and never for get()', () => {
    let now = 0;
    const cache = new TtlCache<string, number>({ ttlMs: 1000, staleMs: 500, now: () => now });
    cache.set('a', 1);
    cache.set('b', 2, 1000, 0);
    now = 1200;
    expect([cache.get('a'), cache.stale('a'), cache.stale('b')]).toEqual([undefined, 1, undefined]);
    now = 1500;
    expect(cache.stale('a')).toBeUndefined();
    cache.set('c', 3);
    cache.delete('c');
    expect(cache.stale('c')).toBeUndefined();
  });
});
