import { describe, expect, it } from 'vitest';
import { withinLimit } from './within-limit.js';

const never = (signal: AbortSignal) =>
  new Promise<string>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

describe('withinLimit', () => {
  it("answers the work's outcome when it ends in time", async () => {
    const caller = new AbortController();
    expect(
      await withinLimit(async () => 'done', { signal: caller.signal, limitMs: 1000, reason: 'slow' }),
    ).toBe('done');
  });

  it('answers timed-out past the limit and aborts the work with the reason', async () => {
    let seen: AbortSignal | undefined;
    const outcome = await withinLimit(
      (signal) => {
        seen = signal;
        return never(signal);
      },
      { signal: new AbortController().signal, limitMs: 20, reason: 'took too long' },
    );
    expect(outcome).toBe('timed-out');
    expect(seen?.aborted).toBe(true);
    expect((seen!.reason as Error).message).toBe('took too long');
  });

  it("passes the caller's abort on to the work", async () => {
    const caller = new AbortController();
    const outcome = withinLimit(never, { signal: caller.signal, limitMs: 1000, reason: 'slow' });
    caller.abort(new Error('stopped'));
    await expect(outcome).rejects.toThrow('stopped');
  });
});
