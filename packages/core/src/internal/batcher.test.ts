import { describe, expect, it } from 'vitest';
import { createBatcher } from './batcher.js';

describe('createBatcher', () => {
  it('processes the calls of one turn in one batch and answers each caller in order', async () => {
    const batches: number[][] = [];
    const double = createBatcher(async (items: number[]) => {
      batches.push(items);
      return items.map((n) => n * 2);
    });
    expect(await Promise.all([1, 2, 3].map(double))).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('gathers calls made during a batch into the next one, and caps batch size', async () => {
    const sizes: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const echo = createBatcher(
      async (items: number[]) => {
        sizes.push(items.length);
        if (sizes.length === 1) await gate;
        return items;
      },
      { maxBatch: 2 },
    );
    const first = echo(0);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [1, 2, 3].map(echo);
    release();
    expect(await Promise.all([first, ...later])).toEqual([0, 1, 2, 3]);
    expect(sizes).toEqual([1, 2, 1]);
  });

  it('fails every caller of a failed batch and goes on with the next', async () => {
    let calls = 0;
    const flaky = createBatcher(async (items: number[]) => {
      if (++calls === 1) throw new Error('boom');
      return items;
    });
    const failed = await Promise.allSettled([flaky(1), flaky(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await flaky(3)).toBe(3);
  });
});
