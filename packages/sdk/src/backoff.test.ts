import { describe, expect, it } from 'vitest';
import { backoffDelay, linkedController, sleep } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles per retry from the base, up to the ceiling', () => {
    const top = () => 1; // the largest draw: the full (capped) delay
    expect([1, 2, 3, 4, 5, 6].map((retry) => backoffDelay(retry, 500, 8000, top))).toEqual([
      500, 1000, 2000, 4000, 8000, 8000,
    ]);
  });

  it('draws each delay from the upper half of its window, so clients that failed together spread out', () => {
    expect(backoffDelay(3, 500, 8000, () => 0)).toBe(1000);
    expect(backoffDelay(3, 500, 8000, () => 0.5)).toBe(1500);
    const draws = new Set(Array.from({ length: 50 }, () => backoffDelay(4, 500, 8000)));
    expect(draws.size).toBeGreaterThan(10);
    for (const delay of draws) {
      expect(delay).toBeGreaterThanOrEqual(2000);
      expect(delay).toBeLessThanOrEqual(4000);
    }
  });
});

describe('sleep and linkedController', () => {
  it('waits out a delay longer than a timer holds instead of returning at once', async () => {
    const controller = new AbortController();
    let settled = false;
    const pending = sleep(3e9, controller.signal).then(
      () => {
        settled = true;
      },
      () => {},
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    controller.abort(new Error('stop'));
    await pending;
  });

  it('rejects a sleep with the reason as soon as its signal aborts', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = sleep(10_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('aborts the linked controller with its parent, and no longer once released', () => {
    const parent = new AbortController();
    const linked = linkedController(parent.signal);
    const released = linkedController(parent.signal);
    released.release();
    parent.abort(new Error('gone'));
    expect(linked.controller.signal.aborted).toBe(true);
    expect(linked.controller.signal.reason).toEqual(new Error('gone'));
    expect(released.controller.signal.aborted).toBe(false);
  });
});
