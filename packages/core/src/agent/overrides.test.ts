import { describe, expect, it } from 'vitest';
import { OVERRIDE_TITLE_MAX, overridesSchema } from './overrides.js';

describe('overridesSchema', () => {
  it('takes titles of 1 to 120 characters, trimmed, and refuses longer or blank ones', () => {
    const title = (value: unknown) => overridesSchema.safeParse({ tools: { a: { title: value } } });
    expect(OVERRIDE_TITLE_MAX).toBe(120);
    expect(title('x'.repeat(120)).success).toBe(true);
    expect(title('  Write a note  ').data?.tools?.a?.title).toBe('Write a note');
    expect(title('x'.repeat(121)).error?.issues[0]?.path).toEqual(['tools', 'a', 'title']);
    expect(title('   ').success).toBe(false);
  });

  it('accepts only agent and mcp under surfaces, and lets other members through', () => {
    expect(overridesSchema.parse({ surfaces: { agent: [], mcp: ['a'] }, other: 1 })).toEqual({
      surfaces: { agent: [], mcp: ['a'] },
      other: 1,
    });
    expect(overridesSchema.safeParse({ surfaces: { web: ['a'] } }).error?.issues[0]?.message).toBe(
      'surfaces accepts only agent and mcp',
    );
    expect(overridesSchema.safeParse({ surfaces: { mcp: ['x'.repeat(65)] } }).success).toBe(false);
  });
});
