/**
 * Closing the wire (a deploy's SIGTERM): turns in flight finish within the grace, new turns are
 * refused with 503 `unavailable` and `Retry-After` meanwhile, and a turn past the grace is
 * cancelled rather than cut without a record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { callerFor, readTurn, testService } from './support/wire.js';

let store: TestStore;
beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => {
  await store?.dispose();
});

const slowTurn = (words: number) => ({
  text: Array.from({ length: words }, (_, i) => `w${i} `),
  chunkDelayMs: 10,
});

describe('closing the wire', () => {
  it('lets a turn in flight finish within the grace and refuses new turns meanwhile', async () => {
    const { model } = scriptedModel([slowTurn(40)]);
    const service = await testService(store, { model });
    const ada = callerFor((request) => service.fetch(request), 'ada-stop');
    const turn = await ada('/chat', { method: 'POST', json: { id: 'graceful', message: 'Talk' } });
    const reading = readTurn(turn);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const closing = service.close({ graceMs: 10_000 });
    const refused = await ada('/chat', { method: 'POST', json: { id: 'late', message: 'Too late' } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await refused.json()).error.code).toBe('unavailable');

    const read = await reading;
    await closing;
    expect(read.message?.metadata).toMatchObject({ status: 'completed' });
    expect(read.chunks.filter((c) => c.type === 'text-delta')).toHaveLength(40);
  });

  it('cancels a turn still running when the grace is over', async () => {
    const { model } = scriptedModel([slowTurn(500)]);
    const service = await testService(store, { model });
    const ada = callerFor((request) => service.fetch(request), 'ada-cut');
    const turn = await ada('/chat', { method: 'POST', json: { id: 'too-long', message: 'Talk on' } });
    const reading = readTurn(turn);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await service.close({ graceMs: 200 });
    expect(Date.now() - started).toBeLessThan(3000);
    const read = await reading;
    // The client sees the stream end with an abort and its finish; the run is recorded as cancelled.
    expect(read.chunks.slice(-2).map((c) => c.type)).toEqual(['abort', 'finish']);
    expect(read.message?.metadata).toMatchObject({ status: 'cancelled' });
    const runId = (read.message!.metadata as { runId: string }).runId;
    const row = await store.db
      .selectFrom('wire_runs')
      .select('status')
      .where('id', '=', runId)
      .executeTakeFirst();
    expect(row?.status).toBe('cancelled');
  });
});
