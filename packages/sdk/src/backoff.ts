/** How a failed attempt is retried. */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 3. */
  attempts?: number;
  /** Delay before the first retry; doubles each time. Default 500 ms. */
  baseDelayMs?: number;
  /**
   * Ceiling of one delay, a server's `Retry-After` included (one asking for longer is thrown at
   * once, with `retryAfter`). Default 8000 ms.
   */
  maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 3, baseDelayMs: 500, maxDelayMs: 8000 };

/**
 * Jittered exponential backoff: `base x 2^(retry-1)`, capped, then drawn uniformly from its upper
 * half, so clients that failed together do not come back together.
 */
export function backoffDelay(
  retry: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random = Math.random,
): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The longest delay a timer holds (Node, browsers); a longer one fires after about 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `onTimeout` after `ms` unless the returned function is called first. A timeout longer
 * than a timer can hold (`Infinity` among them) is no timeout: `setTimeout` would fire it at once.
 */
export function startTimeout(ms: number, onTimeout: () => void): () => void {
  if (ms > MAX_TIMER_MS) return () => {};
  const timer = setTimeout(onTimeout, ms);
  return () => clearTimeout(timer);
}

/**
 * Resolves after `ms` (at most the longest a timer holds: a server's huge `Retry-After` must not
 * wrap around to no wait at all), or rejects with the signal's reason as soon as it aborts.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A controller that aborts when any of `signals` does (or `abort()` is called). `AbortSignal.any`
 * is not everywhere the SDK runs yet. `release()` detaches it from the parents.
 */
export function linkedController(...signals: Array<AbortSignal | undefined>): {
  controller: AbortController;
  release(): void;
} {
  const controller = new AbortController();
  const cleanups: Array<() => void> = [];
  for (const signal of signals) {
    if (!signal) continue;
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => signal.removeEventListener('abort', onAbort));
  }
  return {
    controller,
    release: () => {
      for (const cleanup of cleanups) cleanup();
    },
  };
}
