/**
 * Gathers the calls made while a batch is being prepared or processed into the next batch, and
 * processes each batch with one call (one transaction, one multi-row statement). On a
 * single-backend store every round trip is paid in line, so work that arrives together is done
 * together. Each caller gets the result at its own position; a failed batch fails all of its callers.
 *
 * `hurry()` sends the calls waiting out the delay at once: for a reader that waits on them.
 */
export type Batcher<In, Out> = ((item: In) => Promise<Out>) & { hurry(): void };

export function createBatcher<In, Out>(
  process: (items: In[]) => Promise<Out[]>,
  options: {
    maxBatch?: number;
    /**
     * Wait this long after the first call of each batch for others to join it (a batch that
     * took longer than this is followed at once). Default: one turn.
     */
    delayMs?: number;
  } = {},
): Batcher<In, Out> {
  const maxBatch = options.maxBatch ?? 256;
  const delayMs = options.delayMs ?? 0;
  let queue: Array<{ item: In; resolve: (out: Out) => void; reject: (error: unknown) => void }> = [];
  let running = false;
  /** When the first call waiting for the next batch came. */
  let firstWaiting = 0;
  /** Set by `hurry`: the next batch does not wait out the delay. */
  let hurried = false;
  /** Ends the delay under way now, if one is. */
  let wake: (() => void) | null = null;

  const waitOut = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });

  const drain = async () => {
    while (queue.length > 0) {
      // The calls that came during the last batch wait out the delay too, so batches stay as
      // large when the batches themselves let other work in (they would else follow each other).
      const wait = firstWaiting + delayMs - Date.now();
      if (delayMs > 0 && wait > 0 && !hurried) await waitOut(wait);
      hurried = false;
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        const results = await process(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => {
          entry.resolve(results[i] as Out);
        });
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    running = false;
  };

  const add = (item: In) =>
    new Promise<Out>((resolve, reject) => {
      if (queue.length === 0) firstWaiting = Date.now();
      queue.push({ item, resolve, reject });
      if (!running) {
        running = true;
        // Let the calls of this turn of the event loop (or of the delay) join the first batch.
        if (delayMs > 0) void drain();
        else setImmediate(() => void drain());
      }
    });
  return Object.assign(add, {
    hurry() {
      if (queue.length === 0) return;
      hurried = true;
      wake?.();
    },
  });
}
