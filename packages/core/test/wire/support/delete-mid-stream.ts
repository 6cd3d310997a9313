/**
 * Run as its own process by `resources.test.ts`: deletes a thread while its turn streams, so the
 * run's chunk writes start failing, then checks the process still answers and the run ends. A
 * process that froze (spinning on microtasks) never prints its report, and the test kills it.
 */
import { openTestStore } from '../../support/stores.js';
import { scriptedModel } from './models.js';
import { callerFor, readTurn, testService } from './wire.js';

const store = await openTestStore();
const { model } = scriptedModel([{ text: Array.from({ length: 150 }, (_, i) => `w${i} `), chunkDelayMs: 4 }]);
const service = await testService(store, { model });
const ada = callerFor((request) => service.fetch(request), 'ada');

const turn = await ada('/chat', { method: 'POST', json: { id: 'doomed', message: 'Talk for a while' } });
const reading = readTurn(turn);
// Let a few chunk batches reach the store, then delete the thread (and its run) under the turn.
await new Promise((resolve) => setTimeout(resolve, 120));
const deleted = await ada('/threads/doomed', { method: 'DELETE', json: {} });
await reading;
const status = await ada('/status');
const runs = await ada('/runs');
await service.close();
await store.dispose();
console.log(
  `REPORT ${JSON.stringify({ deleted: deleted.status, status: status.status, runs: runs.status })}`,
);
