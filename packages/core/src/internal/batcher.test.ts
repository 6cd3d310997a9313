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

  it('holds the calls made during a batch for the delay too, counted from the first of them', async () => {
    const started: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const echo = createBatcher(
      async (items: number[]) => {
        started.push(Date.now());
        if (started.length === 1) await gate;
        return items;
      },
      { delayMs: 40 },
    );
    const first = echo(0);
    await new Promise((resolve) => setTimeout(resolve, 45));
    expect(started).toHaveLength(1);
    const joined = Date.now();
    const later = [1, 2].map(echo);
    release();
    expect(await Promise.all([first, ...later])).toEqual([0, 1, 2]);
    // Without the wait the second batch would start as soon as the first ended.
    expect(started[1]! - joined).toBeGreaterThanOrEqual(35);

    // A batch that took longer than the delay is followed at once by the calls it kept waiting:
    // sooner after its end than another delay (long, so a loaded machine's late timers do not
    // pass for one).
    let slowEnded = 0;
    const slow = createBatcher(
      async (items: number[]) => {
        started.push(Date.now());
        if (items[0] === 10) {
          await new Promise((resolve) => setTimeout(resolve, 350));
          slowEnded = Date.now();
        }
        return items;
      },
      { delayMs: 300 },
    );
    const head = slow(10);
    await new Promise((resolve) => setTimeout(resolve, 310));
    const waiting = slow(11);
    await Promise.all([head, waiting]);
    const slowSecond = started[3]!;
    expect(slowSecond - slowEnded).toBeLessThan(300);
  });

  it('sends the calls waiting out the delay at once when hurried, and only those', async () => {
    const started: number[] = [];
    const echo = createBatcher(
      async (items: number[]) => {
        started.push(Date.now());
        return items;
      },
      { delayMs: 10_000 },
    );
    const asked = Date.now();
    const waiting = [1, 2].map(echo);
    echo.hurry();
    expect(await Promise.all(waiting)).toEqual([1, 2]);
    expect(started[0]! - asked).toBeLessThan(1000);

    // Hurried while a batch runs: the calls that queue behind it go right after it.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated = createBatcher(
      async (items: number[]) => {
        if (items[0] === 0) await gate;
        return items;
      },
      { delayMs: 10_000 },
    );
    const first = gated(0);
    gated.hurry();
    await new Promise((resolve) => setImmediate(resolve));
    const behind = gated(5);
    gated.hurry();
    release();
    const before = Date.now();
    expect(await Promise.all([first, behind])).toEqual([0, 5]);
    expect(Date.now() - before).toBeLessThan(1000);

    // Nothing waiting: a hurry does not cut the next batch's delay.
    const idle = createBatcher(async (items: number[]) => items, { delayMs: 60 });
    idle.hurry();
    const from = Date.now();
    await idle(7);
    expect(Date.now() - from).toBeGreaterThanOrEqual(50);
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
