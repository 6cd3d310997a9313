import { describe, expect, it } from 'vitest';
import { formatPath, parsePath, resolvePath } from '../../src/apps/path.js';

describe('binding paths', () => {
  it('reads fields and list positions, and writes them back the same', () => {
    const parsed = parsePath('items[0].customer.name');
    expect(parsed).toEqual({
      ok: true,
      segments: [{ field: 'items' }, { index: 0 }, { field: 'customer' }, { field: 'name' }],
    });
    if (parsed.ok) expect(formatPath(parsed.segments)).toBe('items[0].customer.name');
    expect(parsePath('[2][1].x')).toEqual({
      ok: true,
      segments: [{ index: 2 }, { index: 1 }, { field: 'x' }],
    });
    expect(parsePath('')).toEqual({ ok: true, segments: [] });
  });

  it.each(['a..b', '.a', 'a.', 'a[x]', 'a[-1]', 'a.[0]', 'a]b', 'a[0'])('refuses %j with a hint', (path) => {
    const parsed = parsePath(path);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toContain('items[0].name');
  });

  it('resolves present paths and says how far an absent one got', () => {
    const data = { items: [{ name: 'a', none: null }] };
    const at = (path: string) => {
      const parsed = parsePath(path);
      if (!parsed.ok) throw new Error(parsed.message);
      return resolvePath(data, parsed.segments);
    };
    expect(at('items[0].name')).toEqual({ found: true, value: 'a' });
    expect(at('items[0].none')).toEqual({ found: true, value: null });
    expect(at('items[1].name')).toEqual({ found: false, reached: 1 });
    expect(at('items[0].name.first')).toEqual({ found: false, reached: 3 });
    expect(at('items.length')).toEqual({ found: false, reached: 1 });
    // Inherited members are not data.
    expect(at('items[0].constructor')).toEqual({ found: false, reached: 2 });
  });
});
