import type * as WorkerThreads from 'node:worker_threads';

/** Every engine thread started in the test file that records them, the latest last. */
export const engineThreads: WorkerThreads.Worker[] = [];

/**
 * `node:worker_threads` with a `Worker` that records each thread it starts, so a test can stop the
 * embedded store's thread as an abort would:
 * `vi.mock('node:worker_threads', async (original) => (await import('./support/engine-threads.js')).recordingWorkers(await original()))`.
 */
export function recordingWorkers(real: typeof WorkerThreads): typeof WorkerThreads {
  class RecordedWorker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args);
      engineThreads.push(this);
    }
  }
  return { ...real, Worker: RecordedWorker };
}
