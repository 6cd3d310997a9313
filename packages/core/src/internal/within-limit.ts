/**
 * `work`'s outcome, or `timed-out` when it takes longer than `limitMs`. The work gets a signal
 * that aborts when the caller's does, or when the limit passes (with `reason`), so work that hangs
 * (a host tool, a model call) is told to stop rather than left running after nobody waits for it.
 */
export async function withinLimit<T>(
  work: (signal: AbortSignal) => Promise<T>,
  options: { signal: AbortSignal; limitMs: number; reason: string },
): Promise<T | 'timed-out'> {
  const limit = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<'timed-out'>((resolve) => {
    timer = setTimeout(() => {
      resolve('timed-out');
      limit.abort(new Error(options.reason));
    }, options.limitMs);
  });
  try {
    return await Promise.race([work(AbortSignal.any([options.signal, limit.signal])), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
