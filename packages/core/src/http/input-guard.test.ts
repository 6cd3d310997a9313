/**
 * The shared input guard: clean text, URL segments, JSON depth and text, own-key lookups.
 *
 * @see docs/errors.md "Input rules"
 */
import { describe, expect, it } from 'vitest';
import {
  jsonDepthProblem,
  MAX_JSON_DEPTH,
  ownValue,
  parseJsonInput,
  textProblem,
  urlProblem,
} from './input-guard.js';

describe('textProblem', () => {
  it('accepts ordinary text, emoji (paired surrogates) included', () => {
    expect(textProblem('Ada Lovelace 🚀 Ünïcode')).toBeNull();
  });

  it('refuses a NUL and unpaired surrogates, high or low, anywhere', () => {
    expect(textProblem('a\u0000b')).toBe('contains a NUL character');
    expect(textProblem('a\ud800')).toBe('contains an unpaired UTF-16 surrogate');
    expect(textProblem('\ud800b')).toBe('contains an unpaired UTF-16 surrogate');
    expect(textProblem('a\udc00')).toBe('contains an unpaired UTF-16 surrogate');
    expect(textProblem('\udc00\ud800')).toBe('contains an unpaired UTF-16 surrogate');
  });
});

describe('urlProblem', () => {
  const url = (path: string) => new URL(`http://h${path}`);

  it('refuses %00 in any path segment or query value, and encodings that do not decode', () => {
    expect(urlProblem(url('/api/integrations/%00/usage'))).toBe('path contains a NUL character');
    expect(urlProblem(url('/a?range=x%00'))).toBe('query contains a NUL character');
    expect(urlProblem(url('/a/%ED%A0%80'))).toBe('path has a malformed percent-encoding');
    expect(urlProblem(url('/a?x=%E0%A4%A'))).toBe('query has a malformed percent-encoding');
    expect(urlProblem(url('/api/connections/abc?days=30&x=%C3%A9'))).toBeNull();
  });

  it('checks only the first segments when told to (the proxy forwards the rest as sent)', () => {
    expect(urlProblem(url('/proxy/web-search%00/v1'), { pathSegments: 2 })).toBe(
      'path contains a NUL character',
    );
    expect(urlProblem(url('/proxy/search/v1/%00?q=%00'), { pathSegments: 2 })).toBeNull();
  });
});

describe('parseJsonInput', () => {
  it('reads blank text as {} and parses ordinary JSON', () => {
    expect(parseJsonInput('  ')).toEqual({ ok: true, value: {} });
    expect(parseJsonInput('{"a":[1,{"b":"c"}]}')).toEqual({ ok: true, value: { a: [1, { b: 'c' }] } });
  });

  it('refuses nesting past the cap before parsing, brackets inside strings not counted', () => {
    const deep = `{"metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    expect(parseJsonInput(deep)).toEqual({
      ok: false,
      reason: 'guard',
      message: `body nests deeper than ${MAX_JSON_DEPTH} levels`,
    });
    const atCap = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`;
    expect(parseJsonInput(atCap).ok).toBe(true);
    expect(parseJsonInput(`{"s":"${'[{'.repeat(100)}\\"["}`).ok).toBe(true);
  });

  it('refuses a NUL or lone surrogate in any value or key, naming where', () => {
    expect(parseJsonInput('{"metadata":{"a":["ok","x\\u0000"]}}')).toEqual({
      ok: false,
      reason: 'guard',
      message: 'body.metadata.a.1: contains a NUL character',
    });
    expect(parseJsonInput('{"display_name":"\\ud800"}')).toMatchObject({
      ok: false,
      message: 'body.display_name: contains an unpaired UTF-16 surrogate',
    });
    expect(parseJsonInput('{"k\\u0000":1}')).toMatchObject({
      ok: false,
      message: 'body: a key contains a NUL character',
    });
    expect(parseJsonInput('{"e":"\\ud83d\\ude80"}').ok).toBe(true);
  });

  it('tells a syntax error apart, so each surface words it its own way', () => {
    expect(parseJsonInput('{"a":')).toMatchObject({ ok: false, reason: 'syntax' });
  });
});

describe('jsonDepthProblem', () => {
  it('checks only the depth, on text that need not parse, for callers that word the rest', () => {
    expect(jsonDepthProblem(`${'['.repeat(MAX_JSON_DEPTH)}`)).toBeNull();
    expect(jsonDepthProblem(`${'['.repeat(MAX_JSON_DEPTH + 1)}`)).toBe(
      `body nests deeper than ${MAX_JSON_DEPTH} levels`,
    );
    expect(jsonDepthProblem('[[[', { where: 'metadata', maxDepth: 2 })).toBe(
      'metadata nests deeper than 2 levels',
    );
  });
});

describe('ownValue', () => {
  it('reads own keys only: names every object inherits are unknown', () => {
    const ranges: Record<string, number> = { '1h': 1 };
    expect(ownValue(ranges, '1h')).toBe(1);
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(ownValue(ranges, name)).toBeUndefined();
    }
  });
});
