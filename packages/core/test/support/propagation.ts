/**
 * How long a change took to reach an instance, as seen from outside: calls `call` until it answers
 * `wanted` and returns how many milliseconds after the first call the last call that answered
 * otherwise *started* (0 when the first call already answered `wanted`; infinity when calls were
 * still answering otherwise `giveUpMs` in).
 *
 * Start times, not answer times: on a loaded machine one answer can take longer than the bound
 * being measured while the change had long reached the instance; a call started after it arrived
 * answers `wanted` however long it then takes.
 */
export async function lastStaleCallAfter<T>(
  call: () => Promise<T>,
  wanted: T,
  giveUpMs: number,
): Promise<number> {
  const since = performance.now();
  let lastStale = 0;
  for (;;) {
    const calledAt = performance.now() - since;
    if (calledAt >= giveUpMs) return Number.POSITIVE_INFINITY;
    if ((await call()) === wanted) return lastStale;
    lastStale = calledAt;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
