/**
 * Telling "the database is away" from every other fault. A request that needs the store while
 * PostgreSQL restarts, fails over or cannot be reached is not a bug: it answers 503 with a
 * `Retry-After` hint (each surface in its own error shape) instead of a 500, and the process
 * carries on; the pool and the listener reconnect on their own once the database is back.
 *
 * @see docs/storage.md "When the database goes away"
 */

/** Seconds a client is told to wait (`Retry-After`) before trying again while the store is away. */
export const STORE_RETRY_AFTER_SECONDS = 2;

/** The store could not be reached: for code that knows it before asking the driver (always recognised by `isStoreUnavailable`). */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  readonly retryAfterSeconds = STORE_RETRY_AFTER_SECONDS;
  constructor(message = 'The store is unreachable', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * SQLSTATEs of a lost or refused server connection: class 08 (connection exception), the server
 * shutting down or starting up (57P01-57P03), and too many connections (53300).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|53300)$/;

/** Socket errors of a server that is down, restarting or unreachable. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * What the `pg` driver and its pool say when the connection is gone, or a statement went
 * unanswered for its `query_timeout` (they throw plain `Error`s without a code for these).
 */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Connection ended unexpectedly|Query read timeout)$/;

/**
 * True when `error` (or an error it wraps: `cause`, or one of an `AggregateError`'s) says the
 * database could not be reached or dropped the connection, rather than refusing the statement.
 */
export function isStoreUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  if (error instanceof StoreUnavailableError) return true;
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code)))
    return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
  if (Array.isArray(errors) && errors.some((inner) => isStoreUnavailable(inner, depth + 1))) return true;
  return cause !== undefined && isStoreUnavailable(cause, depth + 1);
}

/**
 * Runs `write` again while it fails because the store is away (after 100 ms, then twice as long
 * each time, up to every second) for at most `withinMs`: a write that must not be lost to a blink
 * of the store (an embedded store's thread starting again, a failover). Any other failure, or one
 * past the bound, is thrown. `write` must be safe to repeat: an attempt whose answer was lost may
 * have committed.
 */
export async function retryWhileUnavailable<T>(
  write: () => Promise<T>,
  withinMs: number,
  { background = false }: { background?: boolean } = {},
): Promise<T> {
  const deadline = Date.now() + withinMs;
  let delayMs = 100;
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (!isStoreUnavailable(error) || Date.now() + delayMs > deadline) throw error;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        // A retry nobody waits for does not keep a stopping process alive (a closed store is
        // "away" too).
        if (background) timer.unref();
      });
      delayMs = Math.min(delayMs * 2, 1000);
    }
  }
}

/**
 * Runs `write` now; when it fails because the store is away, the failure is thrown (its caller
 * answers 503) and the write is tried again in the background, as `retryWhileUnavailable` does,
 * for up to `withinMs`. For a write that ends a claim a blink cut short (an idempotency key
 * reserved, a webhook delivery remembered), which would else outlive the blink and refuse the
 * client's retry.
 */
export async function writeNowOrOnceBack(write: () => Promise<unknown>, withinMs: number): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (isStoreUnavailable(error)) {
      void retryWhileUnavailable(write, withinMs, { background: true }).catch(() => {});
    }
    throw error;
  }
}

/** A failure handler that answers `fallback` when the store is away, and throws anything else. */
export function unlessUnavailable<T>(fallback: T): (error: unknown) => T {
  return (error) => {
    if (!isStoreUnavailable(error)) throw error;
    return fallback;
  };
}

/**
 * How long past its lifetime a lookup cached on the metered path (a key, a tenant's status, a
 * connection, a provider) is still answered when the store cannot be asked: as long as an
 * instance admits calls from its lease into an outage (its last beat that landed is under 4 s
 * old, `store/instances.ts`), so an expiring entry does not end that early.
 */
export const LAST_KNOWN_MS = 4000;

/**
 * `read()`; when it fails because the store cannot be reached, the last known value instead
 * (`lastKnown()`, undefined when there is none: then the failure stands). A store that answered,
 * even with an error, is never second-guessed.
 */
export async function readOrLastKnown<V>(read: () => Promise<V>, lastKnown: () => V | undefined): Promise<V> {
  try {
    return await read();
  } catch (error) {
    const last = isStoreUnavailable(error) ? lastKnown() : undefined;
    if (last === undefined) throw error;
    return last;
  }
}
