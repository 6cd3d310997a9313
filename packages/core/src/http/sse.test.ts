import { describe, expect, it } from 'vitest';
import { formatSse, formatSseComment } from './sse.js';

describe('SSE framing', () => {
  it('writes id, event and one data line per line, ending with a blank line', () => {
    expect(formatSse({ id: '7', event: 'billing.balance_changed', data: '{"a":1}' })).toBe(
      'id: 7\nevent: billing.balance_changed\ndata: {"a":1}\n\n',
    );
    expect(formatSse({ data: 'a\nb\r\nc' })).toBe('data: a\ndata: b\ndata: c\n\n');
  });

  it('refuses an id or event name that would break the frame', () => {
    expect(() => formatSse({ id: '1\nevent: x', data: '' })).toThrow(TypeError);
    expect(() => formatSse({ event: 'a\rb', data: '' })).toThrow(TypeError);
  });

  it('keeps comments on one line', () => {
    expect(formatSseComment('ping')).toBe(': ping\n\n');
    expect(formatSseComment('a\nb')).toBe(': a b\n\n');
  });
});
