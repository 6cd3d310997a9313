import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { capToolOutput, windowMessages } from './history.js';

const user = (text: string): ModelMessage => ({ role: 'user', content: text });
const call = (id: string): ModelMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: id, toolName: 't', input: {} }],
});
const result = (id: string): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: id, toolName: 't', output: { type: 'text', value: 'r' } }],
});
const answer = (text: string): ModelMessage => ({ role: 'assistant', content: text });

describe('windowMessages', () => {
  const history = [
    user('q1'),
    call('a'),
    result('a'),
    answer('a1'),
    user('q2'),
    call('b'),
    result('b'),
    answer('b1'),
    user('q3'),
  ];

  it('keeps everything without a window or when the history fits', () => {
    expect(windowMessages(history, undefined)).toBe(history);
    expect(windowMessages(history, 50)).toBe(history);
  });

  it('keeps the last N messages when they start on a whole message', () => {
    expect(windowMessages(history, 4)).toEqual([call('b'), result('b'), answer('b1'), user('q3')]);
  });

  it('shrinks past tool results whose call fell outside the window', () => {
    expect(windowMessages(history, 3)).toEqual([answer('b1'), user('q3')]);
    expect(windowMessages([call('x'), result('x'), result('x'), user('q')], 3)).toEqual([user('q')]);
  });

  it('always keeps the newest message', () => {
    expect(windowMessages(history, 1)).toEqual([user('q3')]);
  });
});

describe('capToolOutput', () => {
  it('passes JSON and text through when they fit, and when the cap is 0', () => {
    expect(capToolOutput({ a: 1 }, 100)).toEqual({ type: 'json', value: { a: 1 } });
    expect(capToolOutput('short', 100)).toEqual({ type: 'text', value: 'short' });
    expect(capToolOutput('x'.repeat(500), 0)).toEqual({ type: 'text', value: 'x'.repeat(500) });
    expect(capToolOutput(undefined, 10)).toEqual({ type: 'json', value: null });
  });

  it('cuts the JSON text to the cap and says how much was shown', () => {
    const out = capToolOutput({ data: 'y'.repeat(100) }, 20);
    expect(out.type).toBe('text');
    expect(out.value).toBe(
      `${JSON.stringify({ data: 'y'.repeat(100) }).slice(0, 20)}\n[truncated: showing 20 of 111 characters]`,
    );
  });
});
