import { describe, expect, it } from 'vitest';
import { answerBody, type MeterTap } from './forwarding.js';
import type { ChunkSource } from './upstream.js';

const bytes = (text: string) => new TextEncoder().encode(text);

/** A source whose chunks and end are pushed by the test, as the upstream's parser queues them. */
function pushedSource() {
  const queued: Array<Uint8Array | null | Error> = [];
  let reader: ((item: Uint8Array | null | Error) => void) | null = null;
  const take = (item: Uint8Array | null | Error) =>
    item instanceof Error ? Promise.reject(item) : Promise.resolve(item);
  const source: ChunkSource = {
    next() {
      const item = queued.shift();
      if (item !== undefined) return take(item);
      return new Promise<Uint8Array | null>((resolve) => {
        reader = resolve as (item: Uint8Array | null | Error) => void;
      }).then((item) => take(item as Uint8Array | null | Error));
    },
    cancel() {},
    exhausted: () => queued[0] === null,
  };
  const push = (item: Uint8Array | null | Error) => {
    const waiting = reader;
    reader = null;
    if (waiting) waiting(item);
    else queued.push(item);
  };
  return { source, push };
}

/** A tap whose bill becomes durable when the test says so. */
function durableWhenTold(contentLength: number | null = null) {
  const ends: boolean[] = [];
  let makeDurable!: () => void;
  const durable = new Promise<void>((resolve) => {
    makeDurable = resolve;
  });
  const tap: MeterTap = {
    observe() {},
    end(completed) {
      ends.push(completed);
      return completed ? durable : undefined;
    },
    contentLength,
  };
  return { tap, ends, makeDurable };
}

/** Whether a promise has settled within a few turns of the event loop. */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('answerBody', () => {
  it('holds the last chunk of an answer that has already ended until its bill is durable', async () => {
    const { source, push } = pushedSource();
    const { tap, ends, makeDurable } = durableWhenTold();
    push(bytes('{"usage":{}}'));
    push(null);
    const body = answerBody(source, tap);
    const first = body.next();
    expect(await settledSoon(first)).toBe(false);
    makeDurable();
    expect(new TextDecoder().decode((await first)!)).toBe('{"usage":{}}');
    // The end follows at once, so the chunk and the end leave in one write.
    expect(await settledSoon(body.next())).toBe(true);
    expect(ends).toEqual([true]);
  });

  it('hands a chunk out at once while the upstream goes on, and holds the end for the bill', async () => {
    const { source, push } = pushedSource();
    const { tap, ends, makeDurable } = durableWhenTold();
    push(bytes('data: 1\n\n'));
    const body = answerBody(source, tap);
    expect(new TextDecoder().decode((await body.next())!)).toBe('data: 1\n\n');
    const last = body.next();
    push(null);
    expect(await settledSoon(last)).toBe(false);
    makeDurable();
    expect(await last).toBeNull();
    expect(ends).toEqual([true]);
  });

  it('holds the chunk that completes a declared length until the bill is durable', async () => {
    const { source, push } = pushedSource();
    const { tap, ends, makeDurable } = durableWhenTold(4);
    push(bytes('ab'));
    push(bytes('cd'));
    const body = answerBody(source, tap);
    expect(new TextDecoder().decode((await body.next())!)).toBe('ab');
    const completing = body.next();
    expect(await settledSoon(completing)).toBe(false);
    makeDurable();
    expect(new TextDecoder().decode((await completing)!)).toBe('cd');
    expect(ends).toEqual([true]);
  });

  it('hands out what came before an upstream that broke off, then fails as a cut call', async () => {
    const { source, push } = pushedSource();
    const { tap, ends } = durableWhenTold();
    push(bytes('partial'));
    push(new Error('upstream reset'));
    const body = answerBody(source, tap);
    expect(new TextDecoder().decode((await body.next())!)).toBe('partial');
    await expect(body.next()).rejects.toThrow('upstream reset');
    expect(ends).toEqual([false]);
  });
});
