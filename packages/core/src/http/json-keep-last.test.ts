import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyTooLargeError } from './body.js';
import { JsonScanError, KeepLastScanner, readJsonKeepingLast } from './json-keep-last.js';

const encode = (text: string) => new TextEncoder().encode(text);
const BIG = 1 << 20;

/** The scanner's reassembled text for `bytes` cut at `cuts`, or the problem it stopped on. */
function scan(input: string | Uint8Array, cuts: number[] = [], maxPieceBytes = BIG): string | JsonScanError {
  const bytes = typeof input === 'string' ? encode(input) : input;
  const scanner = new KeepLastScanner('messages', { maxPieceBytes });
  try {
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      scanner.write(bytes.subarray(from, cut));
      from = cut;
    }
    return scanner.end();
  } catch (error) {
    if (error instanceof JsonScanError) return error;
    throw error;
  }
}

/** What the scanner's text parses to, or the problem. */
function scanned(input: string | Uint8Array, cuts: number[] = [], maxPieceBytes = BIG): unknown {
  const text = scan(input, cuts, maxPieceBytes);
  return text instanceof JsonScanError ? text.problem : JSON.parse(text === '' ? '{}' : text);
}

/**
 * The oracle: what the whole body parses to, with `messages` cut to its last element. Bytes are
 * decoded as `Request.text()` does (one leading byte order mark dropped); a blank body is `{}`.
 */
function expected(body: string): unknown {
  const text = body.startsWith('\ufeff') ? body.slice(1) : body;
  if (/^[ \t\n\r]*$/.test(text)) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'syntax';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const messages = (value as { messages?: unknown }).messages;
  return Array.isArray(messages) ? { ...value, messages: messages.slice(-1) } : value;
}

/** A POST whose body arrives in `chunks`, counting how many of them were pulled. */
function streamed(chunks: string[], headers: Record<string, string> = {}) {
  let pulled = 0;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next = chunks[pulled++];
        if (next === undefined) controller.close();
        else controller.enqueue(encode(next));
      },
      cancel() {
        cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  const request = new Request('http://x/', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  return { request, pulled: () => pulled, cancelled: () => cancelled };
}

const useChatBody = JSON.stringify({
  id: 'chat-1',
  messages: [
    { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'first "quoted" \\ text ]' }] },
    { id: 'm2', role: 'assistant', parts: [{ type: 'text', text: 'answer with }{][ and \u2028' }] },
    { id: 'm3', role: 'user', parts: [{ type: 'text', text: 'last one ✓ \n' }] },
  ],
  trigger: 'submit-message',
  messageId: null,
  extra: { nested: [1, [2, { deep: true }]] },
});

describe('KeepLastScanner', () => {
  it('keeps the other members and only the last element of the field', () => {
    expect(scanned(useChatBody)).toEqual(expected(useChatBody));
    expect(scanned(useChatBody)).toMatchObject({
      id: 'chat-1',
      messages: [{ id: 'm3' }],
      trigger: 'submit-message',
      messageId: null,
    });
  });

  it('gives the same answer wherever the chunks are cut', () => {
    const texts = [
      useChatBody,
      '\ufeff{"messages":[1,-2.5e+3,"a\\"b",[true,false,null]],"k":0}',
      '{"m\\u0065ssages":[{"t":"\\u005d\\\\"},{"t":"x\\\\\\"]"}]}',
      '[1,{"messages":[1,2]}]',
      '  -0.0E-0  ',
      '{"messages":[1,2,tru]}',
      '{"messages":[1,2]} x',
    ];
    for (const text of texts) {
      const bytes = encode(text);
      const whole = scanned(bytes);
      expect(whole).toEqual(expected(text));
      for (let cut = 0; cut <= bytes.length; cut++)
        expect(scanned(bytes, [cut]), `${text} @${cut}`).toEqual(whole);
      const everyByte = Array.from({ length: bytes.length }, (_, i) => i);
      expect(scanned(bytes, everyByte), text).toEqual(whole);
    }
  });

  it('reads escapes inside strings and keys: \\" and \\\\ never end a string, \\u005d never closes an array', () => {
    const text = String.raw`{"messages":["a\"],[", "b\\", "c\u005d\u005b", {"q\"":"\\\""}],"m\u0065ssage":"\u0022"}`;
    expect(scanned(text)).toEqual({ messages: [{ 'q"': '\\"' }], message: '"' });
    // An escaped key naming the field is the field.
    expect(scanned('{"m\\u0065ssages":[1,2,3]}')).toEqual({ messages: [3] });
  });

  it('keeps a last element holding nested arrays whole, and drops earlier ones however nested', () => {
    const text = '{"messages":[[[[1]]],{"a":[2,[3,{"b":[]}]]},[[4,[5]],{"c":[6]}]]}';
    expect(scanned(text)).toEqual({ messages: [[[4, [5]], { c: [6] }]] });
    expect(scanned('{"messages":[]}')).toEqual({ messages: [] });
    expect(scanned('{"messages":[1],"messages":[]}')).toEqual({ messages: [] });
  });

  it('passes a field that is not an array, and a top-level value that is not an object, as they are', () => {
    expect(scanned('{"messages":{"a":[1,2]},"x":1}')).toEqual({ messages: { a: [1, 2] }, x: 1 });
    expect(scanned('{"messages":"text"}')).toEqual({ messages: 'text' });
    expect(scanned('[{"messages":[1,2]}]')).toEqual([{ messages: [1, 2] }]);
    expect(scanned('"just text"')).toBe('just text');
    expect(scanned('12')).toBe(12);
    expect(scanned('{"inner":{"messages":[1,2]}}')).toEqual({ inner: { messages: [1, 2] } });
  });

  it('reads an empty or blank body, after an optional byte order mark, as {}', () => {
    for (const text of ['', '  \n\t', '\ufeff', '\ufeff  ']) expect(scan(text)).toBe('');
    expect(scanned(new Uint8Array([0xef, 0xbb]))).toBe('syntax');
  });

  it('finds malformed JSON anywhere, also inside elements it drops', () => {
    const malformed = [
      '{"messages":[1,2]', // unbalanced
      '{"messages":[1,2}}',
      '{"messages":[{"a":1],2]}',
      '{"messages":[tru,2]}', // a bad token in a dropped element
      '{"messages":[nulL,2]}',
      '{"messages":[01,2]}',
      '{"messages":[1.,2]}',
      '{"messages":[-,2]}',
      '{"messages":[1e,2]}',
      '{"messages":["a\u0001b",2]}', // a raw control character
      '{"messages":["\\x",2]}',
      '{"messages":["\\u12g4",2]}',
      '{"messages":[1,,2]}',
      '{"messages":[1,2,]}',
      '{"messages":[1 2]}',
      '{"a":1,}',
      '{"a" 1}',
      '{1:2}',
      '{"messages":[1]}}',
      '{"messages":[1]} {}', // trailing garbage
      '{"messages":[1]}x',
      '{"messages":[1]}\ufeff',
      '\ufeff\ufeff{}',
      'nul',
      '"open',
      '[',
      '-',
    ];
    for (const text of malformed) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(scanned(text), text).toBe('syntax');
    }
  });

  it('refuses nesting past the cap anywhere, also in elements it drops', () => {
    const deep = `${'['.repeat(33)}${']'.repeat(33)}`;
    expect(scanned(`{"messages":[${deep},1]}`)).toBe('depth');
    const atCap = `${'['.repeat(30)}${']'.repeat(30)}`;
    expect(scanned(`{"messages":[${atCap},1]}`)).toEqual({ messages: [1] });
  });

  it('caps each kept piece, not the dropped elements', () => {
    const big = 'x'.repeat(100);
    expect(scanned(`{"messages":["${big}","${big}","short"]}`, [], 64)).toEqual({ messages: ['short'] });
    expect(scanned(`{"messages":["short","${big}"]}`, [], 64)).toBe('piece');
    expect(scanned(`{"other":"${big}","messages":["short"]}`, [], 64)).toBe('piece');
    expect(scanned(`{"a":"${'y'.repeat(30)}","b":"${'y'.repeat(30)}","messages":[1]}`, [], 64)).toBe('piece');
    expect(scanned(`{"messages":"${big}"}`, [], 64)).toBe('piece');
    expect(scanned(`["${big}"]`, [], 64)).toBe('piece');
  });

  it('holds the last element and the other members, never the history before it', () => {
    const scanner = new KeepLastScanner('messages', { maxPieceBytes: BIG });
    const element = JSON.stringify({ role: 'user', text: 'x'.repeat(10_000) });
    scanner.write(encode('{"id":"c","messages":['));
    let mostHeld = 0;
    for (let i = 0; i < 500; i++) {
      scanner.write(encode(`${element},`));
      mostHeld = Math.max(mostHeld, scanner.heldBytes);
    }
    scanner.write(encode(`${element}]}`));
    // 5 MB went through; what is held is the room for one element (a buffer grows by doubling).
    expect(mostHeld).toBeLessThan(4 * element.length);
    expect(JSON.parse(scanner.end()).messages).toHaveLength(1);
  });

  it('accepts exactly what JSON.parse accepts, and then gives its value with the field cut to the last element', () => {
    const message = fc.record({
      id: fc.string(),
      role: fc.constantFrom('user', 'assistant'),
      parts: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }),
    });
    const body = fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .tuple(
            fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
            fc.array(fc.oneof(message, fc.jsonValue({ maxDepth: 4 })), { maxLength: 5 }),
          )
          .map(([others, messages]) => ({ ...others, messages })),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    );
    const text = fc.tuple(body, fc.boolean(), fc.boolean()).map(([value, pretty, escapedKey]) => {
      const json = JSON.stringify(value, null, pretty ? 2 : undefined) ?? 'null';
      return escapedKey ? json.replace('"messages"', '"m\\u0065ssages"') : json;
    });
    const corruption = fc.oneof(
      fc.constant(null),
      fc.record({
        kind: fc.constantFrom('delete', 'insert', 'replace', 'truncate', 'append'),
        at: fc.nat(),
        char: fc.constantFrom(...'{}[]",:\\ 0123456789.-+eEtrufalsn\u0001\ufeffx'.split('')),
      }),
    );
    fc.assert(
      fc.property(text, corruption, fc.array(fc.nat(), { maxLength: 4 }), (json, change, rawCuts) => {
        let corrupted = json;
        if (change) {
          const at = json.length === 0 ? 0 : change.at % (json.length + 1);
          if (change.kind === 'delete') corrupted = json.slice(0, at) + json.slice(at + 1);
          if (change.kind === 'insert') corrupted = json.slice(0, at) + change.char + json.slice(at);
          if (change.kind === 'replace') corrupted = json.slice(0, at) + change.char + json.slice(at + 1);
          if (change.kind === 'truncate') corrupted = json.slice(0, at);
          if (change.kind === 'append') corrupted = json + change.char;
        }
        const bytes = encode(corrupted);
        const cuts = [...new Set(rawCuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
        expect(scanned(bytes, cuts)).toEqual(expected(corrupted));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('readJsonKeepingLast', () => {
  const limits = { maxPieceBytes: 64, maxTotalBytes: 1000 };
  const history = (count: number) =>
    Array.from({ length: count }, (_, i) => JSON.stringify({ id: `m${i}`, text: 'x'.repeat(40) }));

  it('reads a body far past the piece cap chunk by chunk, keeping the last element', async () => {
    const chunks = ['{"id":"c","messages":[', history(15).join(','), ',{"id":"last"}]}'];
    const input = await readJsonKeepingLast(streamed(chunks).request, 'messages', limits);
    expect(input).toEqual({ ok: true, value: { id: 'c', messages: [{ id: 'last' }] } });
  });

  it('refuses a body past the total cap: unread when declared, else where it passes the cap', async () => {
    const declared = streamed(['{}'], { 'content-length': '1001' });
    await expect(readJsonKeepingLast(declared.request, 'messages', limits)).rejects.toBeInstanceOf(
      BodyTooLargeError,
    );
    expect(declared.pulled()).toBe(0);
    const chunks = ['{"messages":[', ...history(30).map((m) => `${m},`), '1]}'];
    const undeclared = streamed(chunks);
    const tooLarge = (limit: 'piece' | 'total') => new Error(`too large: ${limit}`);
    await expect(
      readJsonKeepingLast(undeclared.request, 'messages', { ...limits, tooLarge }),
    ).rejects.toThrow('too large: total');
    expect(undeclared.cancelled()).toBe(true);
    expect(undeclared.pulled()).toBeLessThan(chunks.length);
  });

  it('refuses a last element past the piece cap in the caller’s terms', async () => {
    const tooLarge = (limit: 'piece' | 'total') => new Error(`too large: ${limit}`);
    const body = streamed([`{"messages":[1,"${'x'.repeat(80)}"]}`]);
    await expect(readJsonKeepingLast(body.request, 'messages', { ...limits, tooLarge })).rejects.toThrow(
      'too large: piece',
    );
  });

  it('stops reading at the first syntax error', async () => {
    const body = streamed(['{"messages":[1,', 'oops', ...history(10)]);
    expect(await readJsonKeepingLast(body.request, 'messages', limits)).toEqual({
      ok: false,
      reason: 'syntax',
      message: 'body must be valid JSON',
    });
    expect(body.pulled()).toBe(2);
    expect(body.cancelled()).toBe(true);
  });

  it('guards what it keeps as parseJsonInput does (nesting, NUL, lone surrogates)', async () => {
    const read = (text: string) => readJsonKeepingLast(streamed([text]).request, 'messages', limits);
    expect(await read('{"messages":[1,"a\\u0000"]}')).toEqual({
      ok: false,
      reason: 'guard',
      message: 'body.messages.0: contains a NUL character',
    });
    expect(await read('{"id":"\\ud800","messages":[1]}')).toMatchObject({ ok: false, reason: 'guard' });
    expect(await read(`{"messages":[${'['.repeat(40)}]}`)).toEqual({
      ok: false,
      reason: 'guard',
      message: 'body nests deeper than 32 levels',
    });
    // A dropped element is never handed on, so it is not held to the text rules.
    expect(await read('{"messages":["a\\u0000",2]}')).toEqual({ ok: true, value: { messages: [2] } });
    expect(await read('')).toEqual({ ok: true, value: {} });
  });
});
