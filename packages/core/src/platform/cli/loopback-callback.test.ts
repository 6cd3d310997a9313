import { describe, expect, it } from 'vitest';
import { parseLoopbackCallback } from './loopback-callback.js';

describe('parseLoopbackCallback', () => {
  it('accepts the two spellings of the loopback listener, with the origin the page may connect to', () => {
    expect(parseLoopbackCallback('http://127.0.0.1:53682/done')).toEqual({
      url: 'http://127.0.0.1:53682/done',
      origin: 'http://127.0.0.1:53682',
      port: 53682,
    });
    expect(parseLoopbackCallback('http://localhost:1/done')?.origin).toBe('http://localhost:1');
  });

  it('refuses every other URL and non-strings', () => {
    for (const value of [
      undefined,
      null,
      42,
      ['http://127.0.0.1:1/done'],
      'http://127.0.0.1:01/done',
      'http://127.0.0.1:99999/done',
      'HTTP://127.0.0.1:1/done',
      'http://LOCALHOST:1/done',
      'http://127.0.0.1:1/done\n',
      ' http://127.0.0.1:1/done',
      'http://127.0.0.1:1/Done',
      'http://127.0.0.1:1//done',
      'http://127.0.0.1:1/done%00',
      'http://localhost.:1/done',
      'http://0x7f.0.0.1:1/done',
    ]) {
      expect(parseLoopbackCallback(value), String(value)).toBeNull();
    }
  });
});
