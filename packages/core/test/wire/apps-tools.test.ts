/**
 * The apps tools inside a real turn: a scripted model calls `service_make`, the turn's stream
 * carries the app as one data part (streaming, then final, under the app's id) and the model reads
 * back the receipt of words; a refused build ends its part failed, with nothing painted.
 *
 * @see docs/apps.md "Tools"
 */
import type { UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { callerFor, readTurn, testService } from './support/wire.js';

let store: TestStore;
const services: Service[] = [];

const listOrders = {
  name: 'list_orders',
  description: 'Lists open orders',
  input: z.object({}),
  output: z.object({ count: z.number().int(), items: z.array(z.object({ id: z.string() })) }),
  risk: 'read' as const,
  execute: async () => ({ count: 1, items: [{ id: 'o1' }] }),
};

const document = (path: string) => ({
  version: 1,
  title: 'Open orders',
  queries: { orders: { tool: 'list_orders' } },
  root: { component: 'Stat', props: { label: 'Open', value: { $query: 'orders', path } } },
});

beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => {
  for (const service of services) await service.close();
  await store?.dispose();
});

async function turnWith(user: string, input: unknown) {
  const scripted = scriptedModel([
    { toolCalls: [{ id: 'call_make', name: 'service_make', input }] },
    { text: ['Done.'] },
  ]);
  const service = await testService(store, { model: scripted.model, tools: [listOrders] });
  services.push(service);
  const turn = await readTurn(
    await callerFor(service.fetch, user)('/chat', { method: 'POST', json: { message: 'show my orders' } }),
  );
  return { turn, scripted };
}

function appParts(chunks: UIMessageChunk[]) {
  return chunks.filter(
    (c): c is Extract<UIMessageChunk, { type: `data-${string}` }> => c.type === 'data-service-app',
  );
}

describe('apps tools in a turn', () => {
  it('streams the app as one data part, final under the app id, and answers the receipt', async () => {
    const { turn, scripted } = await turnWith('ana', { wish: 'show my orders', document: document('count') });
    const [app] = await new AppStore(store.db).listApps('ana');
    expect(app).toMatchObject({ name: 'Open orders', version: 1 });

    const parts = appParts(turn.chunks);
    expect(parts.map((p) => (p.data as { state: string }).state)).toEqual([
      'streaming',
      'streaming',
      'final',
    ]);
    expect(parts.every((p) => p.id === app!.id)).toBe(true);
    // The part comes after the call it belongs to.
    const callAt = turn.chunks.findIndex(
      (c) => c.type === 'tool-input-available' && c.toolCallId === 'call_make',
    );
    expect(callAt).toBeGreaterThanOrEqual(0);
    expect(turn.chunks.indexOf(parts[0]!)).toBeGreaterThan(callAt);

    // The assembled message holds one app part (replaced in place), final, with the document.
    const inMessage = turn.message?.parts.filter((p) => p.type === 'data-service-app') ?? [];
    expect(inMessage).toHaveLength(1);
    expect(inMessage[0]).toMatchObject({
      id: app!.id,
      data: { state: 'final', version: 1, document: { title: 'Open orders' } },
    });

    const output = turn.chunks.find((c) => c.type === 'tool-output-available');
    expect(output).toMatchObject({ output: { status: 'built', app: 'Open orders', where: 'your apps' } });
    expect(JSON.stringify((output as { output: unknown }).output)).not.toContain('component');
    // The model read the receipt back on its next step.
    expect(JSON.stringify(scripted.calls[1]!.prompt)).toContain(`saved as version 1 of ${app!.id}`);
  });

  it('ends a refused build’s part failed, with no document, and saves nothing', async () => {
    const { turn } = await turnWith('ben', { wish: 'show totals', document: document('total') });
    expect(await new AppStore(store.db).listApps('ben')).toEqual([]);
    const inMessage = turn.message?.parts.filter((p) => p.type === 'data-service-app') ?? [];
    expect(inMessage).toHaveLength(1);
    expect(inMessage[0]).toMatchObject({ data: { state: 'failed' } });
    expect((inMessage[0] as { data: object }).data).not.toHaveProperty('document');
    expect(turn.chunks.find((c) => c.type === 'tool-output-available')).toMatchObject({
      output: { status: 'failed' },
    });
  });
});
