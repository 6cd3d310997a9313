/**
 * Calls `gone` once if the caller's connection closes before its response has been written
 * whole. The request's abort signal alone does not say so: under `@hono/node-server` it is
 * aborted only if it was created before the connection closed, and a response handed to a
 * connection already closed is never read nor cancelled. So the Node response in the adapter's
 * bindings (`env.outgoing`) is watched as well, when there is one.
 */
export function whenClientGone(env: unknown, signal: AbortSignal, gone: () => void): void {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    gone();
  };
  if (signal.aborted) {
    once();
    return;
  }
  signal.addEventListener('abort', once, { once: true });
  const outgoing = (env as { outgoing?: NodeResponseLike } | undefined)?.outgoing;
  if (!outgoing || typeof outgoing.once !== 'function') return;
  if (outgoing.destroyed && !outgoing.writableFinished) {
    once();
    return;
  }
  outgoing.once('close', () => {
    if (!outgoing.writableFinished) once();
  });
}

/** What is used of a `node:http` ServerResponse (without importing it: adapters differ). */
interface NodeResponseLike {
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  once(event: 'close', listener: () => void): unknown;
}
