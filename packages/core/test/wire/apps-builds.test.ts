/**
 * Builds inside real turns: the app's tree painted as the model writes the input (under the part
 * id the saved app gets), a refused edit that shows the last good version again, the build time
 * limit on checks that hang, and the slot that says it is being built while a build targets it.
 *
 * @see docs/apps.md "The app in the chat"
 */
import type { UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type ScriptedStep, scriptedModel } from './support/models.js';
import { callerFor, eventually, readTurn, testService } from './support/wire.js';

let store: TestStore;
const services: Service[] = [];

/** A read tool whose answer waits for `release()` (or never comes, if nobody releases it). */
function gatedTool(name: string) {
  const signals: AbortSignal[] = [];
  let open: () => void = () => {};
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    tool: {
      name,
      description: 'Lists open orders, slowly',
      input: z.object({}),
      output: z.object({ count: z.number().int() }),
      risk: 'read' as const,
      execute: async (_input: unknown, context: { signal: AbortSignal }) => {
        signals.push(context.signal);
        await gate;
        return { count: 3 };
      },
    },
    /** The signal each run was given, latest last. */
    signals,
    release: () => open(),
    rearm: () => {
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  };
}

const listOrders = {
  name: 'list_orders',
  description: 'Lists open orders',
  input: z.object({}),
  output: z.object({ count: z.number().int(), items: z.array(z.object({ id: z.string() })) }),
  risk: 'read' as const,
  execute: async () => ({ count: 1, items: [{ id: 'o1' }] }),
};

const document = (title: string, tool = 'list_orders', path = 'count') => ({
  version: 1,
  title,
  queries: { orders: { tool } },
  root: {
    component: 'Stack',
    children: [
      { component: 'Heading', props: { text: title } },
      { component: 'Stat', props: { label: 'Open', value: { $query: 'orders', path } } },
      { component: 'Text', props: { text: 'Orders placed today, from the shop' } },
    ],
  },
});

const slow = gatedTool('slow_orders');
const hanging = gatedTool('hanging_orders');

beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => {
  slow.release();
  hanging.release();
  for (const service of services) await service.close();
  await store?.dispose();
});

async function serviceWith(steps: ScriptedStep[], buildTimeLimitMs?: number) {
  const scripted = scriptedModel(steps);
  const service = await testService(store, {
    model: scripted.model,
    tools: [listOrders, slow.tool, hanging.tool],
    apps: {
      slots: [{ id: 'home.top', page: '/home', label: 'Top of home' }],
      ...(buildTimeLimitMs ? { buildTimeLimitMs } : {}),
    },
  });
  services.push(service);
  return service;
}

function makeStep(input: object, streamInput?: number): ScriptedStep[] {
  return [
    {
      toolCalls: [{ id: 'call_make', name: 'service_make', input, ...(streamInput ? { streamInput } : {}) }],
      ...(streamInput ? { chunkDelayMs: 8 } : {}),
    },
    { text: ['Done.'] },
  ];
}

function appParts(chunks: UIMessageChunk[]) {
  return chunks.filter(
    (c): c is Extract<UIMessageChunk, { type: `data-${string}` }> => c.type === 'data-service-app',
  );
}

type Placed = {
  placements: Array<{ slot: string; appId: string }>;
  building: Array<{ slot: string; appId: string; since: string }>;
};

describe('builds in a turn', () => {
  it('paints the growing tree while the model writes it, under the saved app’s id, throttled', async () => {
    const input = { wish: 'show my orders', document: document('Open orders') };
    const service = await serviceWith(makeStep(input, 12));
    const turn = await readTurn(
      await callerFor(service.fetch, 'ana')('/chat', { method: 'POST', json: { message: 'orders' } }),
    );
    const [app] = await new AppStore(store.db).listApps('ana');
    expect(app).toMatchObject({ name: 'Open orders', version: 1 });
    const deltas = turn.chunks.filter((c) => c.type === 'tool-input-delta').length;
    const parts = appParts(turn.chunks);
    expect(parts.every((p) => p.id === app!.id)).toBe(true);
    const states = parts.map((p) => (p.data as { state: string }).state);
    expect(states.at(-1)).toBe('final');
    // Previews came while the input streamed: before the input was whole, each with a partial tree.
    const inputAt = turn.chunks.findIndex((c) => c.type === 'tool-input-available');
    const previews = parts.filter((p) => turn.chunks.indexOf(p) < inputAt);
    expect(previews.length).toBeGreaterThanOrEqual(2);
    expect(previews.length).toBeLessThan(deltas / 2);
    const trees = previews.map((p) => (p.data as { document: { root: object } | null }).document);
    expect(trees.some((tree) => tree !== null)).toBe(true);
    expect(JSON.stringify(trees.at(-1))).not.toBe(JSON.stringify(input.document));
    // Every preview follows the call's own start on the stream.
    const startAt = turn.chunks.findIndex((c) => c.type === 'tool-input-start');
    expect(turn.chunks.indexOf(previews[0]!)).toBeGreaterThan(startAt);
    // The message keeps one part, final.
    const inMessage = turn.message?.parts.filter((p) => p.type === 'data-service-app') ?? [];
    expect(inMessage).toEqual([
      expect.objectContaining({ id: app!.id, data: expect.objectContaining({ state: 'final' }) }),
    ]);
  });

  it('ends the preview of an input the tool refuses, so no part is left building', async () => {
    // No `wish`: the input streams (and previews), then fails the tool's schema; execute never runs.
    const service = await serviceWith(makeStep({ document: document('Half') }, 12));
    const turn = await readTurn(
      await callerFor(service.fetch, 'flo')('/chat', { method: 'POST', json: { message: 'orders' } }),
    );
    expect(turn.chunks.some((c) => c.type === 'tool-output-error')).toBe(true);
    const parts = appParts(turn.chunks);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(parts.map((p) => p.id)).size).toBe(1);
    expect(parts.at(-1)!.data).toMatchObject({ state: 'failed' });
    expect(parts.at(-1)!.data).not.toHaveProperty('document');
    expect(await new AppStore(store.db).listApps('flo')).toEqual([]);
  });

  it('a refused new build ends failed with no tree; a refused edit shows the last good version', async () => {
    const bad = document('Totals', 'list_orders', 'total');
    const refusedNew = await readTurn(
      await callerFor((await serviceWith(makeStep({ wish: 'totals', document: bad }, 16))).fetch, 'bo')(
        '/chat',
        {
          method: 'POST',
          json: { message: 'totals' },
        },
      ),
    );
    const lastNew = refusedNew.message?.parts.filter((p) => p.type === 'data-service-app') ?? [];
    expect(lastNew).toHaveLength(1);
    expect((lastNew[0] as { data: object }).data).toMatchObject({ state: 'failed' });
    expect((lastNew[0] as { data: object }).data).not.toHaveProperty('document');

    const apps = new AppStore(store.db);
    const built = await readTurn(
      await callerFor(
        (await serviceWith(makeStep({ wish: 'orders', document: document('Mine') }))).fetch,
        'bo',
      )('/chat', { method: 'POST', json: { message: 'orders' } }),
    );
    expect(built.chunks.some((c) => c.type === 'tool-output-available')).toBe(true);
    const [app] = await apps.listApps('bo');
    const edit = await readTurn(
      await callerFor(
        (await serviceWith(makeStep({ wish: 'totals', appId: app!.id, document: bad }, 16))).fetch,
        'bo',
      )('/chat', { method: 'POST', json: { message: 'totals' } }),
    );
    expect(edit.chunks.find((c) => c.type === 'tool-output-available')).toMatchObject({
      output: { status: 'failed' },
    });
    const parts = appParts(edit.chunks);
    expect(parts.every((p) => p.id === app!.id)).toBe(true);
    expect(parts.at(-1)!.data).toEqual({
      state: 'final',
      appId: app!.id,
      title: 'Mine',
      version: 1,
      document: document('Mine'),
    });
    expect((await apps.getApp('bo', app!.id))?.version).toBe(1);
  });

  it('the slot answers building while a build targets it, then the placed app', async () => {
    slow.rearm();
    const service = await serviceWith(
      makeStep({ wish: 'orders', slot: 'home.top', document: document('Slow orders', 'slow_orders') }),
    );
    const caller = callerFor(service.fetch, 'cy');
    const placed = async () => (await (await caller('/apps/placements?page=/home')).json()) as Placed;
    expect(await placed()).toEqual({ placements: [], building: [] });
    const turn = readTurn(await caller('/chat', { method: 'POST', json: { message: 'orders' } }));
    const during = await eventually(async () => {
      const answer = await placed();
      return answer.building.length > 0 ? answer : undefined;
    });
    expect(during.placements).toEqual([]);
    expect(during.building).toEqual([
      { slot: 'home.top', appId: expect.stringMatching(/^app_/), since: expect.any(String) },
    ]);
    // Another person's slot is not being built.
    expect(
      (await (await callerFor(service.fetch, 'dee')('/apps/placements')).json()) as Placed,
    ).toMatchObject({
      building: [],
    });
    slow.release();
    await turn;
    const after = await placed();
    expect(after.building).toEqual([]);
    expect(after.placements).toEqual([
      expect.objectContaining({ slot: 'home.top', appId: during.building[0]!.appId }),
    ]);
  });

  it('an edit whose input writes the document before the app id leaves no stray part, in either order', async () => {
    const apps = new AppStore(store.db);
    const first = await serviceWith(makeStep({ wish: 'orders', document: document('Orders') }));
    await readTurn(
      await callerFor(first.fetch, 'fay')('/chat', { method: 'POST', json: { message: 'orders' } }),
    );
    const [app] = await apps.listApps('fay');
    /** Each part id's last state, as the client keeps it (a later part replaces an earlier one). */
    const lastStates = async (input: object) => {
      const service = await serviceWith(makeStep(input, 12));
      const turn = await readTurn(
        await callerFor(service.fetch, 'fay')('/chat', { method: 'POST', json: { message: 'edit' } }),
      );
      const last = new Map<string, string>();
      for (const part of appParts(turn.chunks)) last.set(part.id!, (part.data as { state: string }).state);
      return last;
    };

    // `appId` first: every part is the edited app's.
    const appIdFirst = await lastStates({ wish: 'rename', appId: app!.id, document: document('Renamed') });
    expect([...appIdFirst]).toEqual([[app!.id, 'final']]);

    // `document` first: the guessed new app's preview is withdrawn, never left failed beside the edit.
    const documentFirst = await lastStates({ wish: 'again', document: document('Again'), appId: app!.id });
    expect(documentFirst.get(app!.id)).toBe('final');
    expect([...documentFirst.values()].sort()).toEqual(['final', 'withdrawn']);
    expect((await apps.listApps('fay')).map((a) => [a.id, a.version])).toEqual([[app!.id, 3]]);
  });

  it('a slot build record counts as in flight a margin past the time limit (it starts before the checks)', async () => {
    const service = await serviceWith([], 300);
    const apps = new AppStore(store.db);
    await apps.startSlotBuild('gil', 'home.top', 'app_gil');
    await store.db
      .updateTable('wire_slot_builds')
      .set({ started_at: new Date(Date.now() - 1000) })
      .where('owner', '=', 'gil')
      .execute();
    const answer = (await (await callerFor(service.fetch, 'gil')('/apps/placements')).json()) as Placed;
    expect(answer.building).toEqual([expect.objectContaining({ slot: 'home.top', appId: 'app_gil' })]);
    await apps.endSlotBuild('gil', 'home.top', 'app_gil');
  });

  it('a build whose checks hang times out: nothing saved, the slot keeps its app, no longer building', async () => {
    const apps = new AppStore(store.db);
    const first = await serviceWith(
      makeStep({ wish: 'orders', slot: 'home.top', document: document('Kept') }),
    );
    await readTurn(
      await callerFor(first.fetch, 'eve')('/chat', { method: 'POST', json: { message: 'orders' } }),
    );
    const [kept] = await apps.listApps('eve');
    expect(kept).toBeDefined();

    const service = await serviceWith(
      makeStep({ wish: 'orders', slot: 'home.top', document: document('Never', 'hanging_orders') }),
      300,
    );
    const caller = callerFor(service.fetch, 'eve');
    const started = Date.now();
    const turn = await readTurn(await caller('/chat', { method: 'POST', json: { message: 'orders' } }));
    expect(Date.now() - started).toBeLessThan(5000);
    const output = turn.chunks.find((c) => c.type === 'tool-output-available') as {
      output: { status: string; note: string };
    };
    expect(output.output.status).toBe('failed');
    expect(output.output.note).toMatch(/^the build timed out/);
    // The hung query was told to stop when the limit passed, not left running.
    expect(hanging.signals.at(-1)?.aborted).toBe(true);
    expect((await apps.listApps('eve')).map((a) => a.id)).toEqual([kept!.id]);
    const parts = appParts(turn.chunks);
    expect(parts.at(-1)!.data).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^the build timed out/),
    });
    const answer = (await (await caller('/apps/placements')).json()) as Placed;
    expect(answer).toEqual({
      placements: [expect.objectContaining({ slot: 'home.top', appId: kept!.id })],
      building: [],
    });
  });
});
