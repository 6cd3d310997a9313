import { describe, expect, it } from 'vitest';
import { BodyTooLargeError, readBody, readBodyText, readFormFields } from './body.js';

/** A POST whose body arrives in `chunks`, counting how many of them were pulled. */
function streamed(chunks: string[], headers: Record<string, string> = {}) {
  let pulled = 0;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next = chunks[pulled++];
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
      cancel() {
        cancelled = true;
      },
    },
    // Nothing is pulled until someone reads.
    { highWaterMark: 0 },
  );
  const request = new Request('http://x/', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  return { request, pulled: () => pulled, cancelled: () => cancelled };
}

describe('readBody', () => {
  it('reads a body under the cap, and an absent one as empty', async () => {
    expect(
      await readBodyText(new Request('http://x/', { method: 'POST', body: 'hello' }), { maxBytes: 5 }),
    ).toBe('hello');
    expect((await readBody(new Request('http://x/'), { maxBytes: 1 })).byteLength).toBe(0);
  });

  it('refuses a declared Content-Length past the cap without reading', async () => {
    const body = streamed(['x'], { 'content-length': '11' });
    await expect(readBody(body.request, { maxBytes: 10 })).rejects.toBeInstanceOf(BodyTooLargeError);
    expect(body.pulled()).toBe(0);
  });

  it('stops at the cap and cancels the stream, with the caller’s own error', async () => {
    const body = streamed(['aaaa', 'bbbb', 'cccc', 'dddd']);
    const mine = new Error('mine');
    await expect(readBody(body.request, { maxBytes: 6, tooLarge: () => mine })).rejects.toBe(mine);
    expect(body.cancelled()).toBe(true);
    expect(body.pulled()).toBeLessThan(4);
  });
});

describe('readFormFields', () => {
  it('reads urlencoded fields (the last of a repeated name) and ignores other types', async () => {
    const form = (type: string, text: string) =>
      readFormFields(
        new Request('http://x/', { method: 'POST', body: text, headers: { 'content-type': type } }),
        {
          maxBytes: 100,
        },
      );
    expect(await form('application/x-www-form-urlencoded', 'a=1&a=2&b=%20x')).toEqual({ a: '2', b: ' x' });
    expect(await form('text/plain', 'a=1')).toEqual({});
    await expect(form('text/plain', 'a'.repeat(101))).rejects.toBeInstanceOf(BodyTooLargeError);
  });
});
