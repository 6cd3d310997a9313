/**
 * A tool's `inputStream` in a real turn: `end` runs only for a call whose `execute` never started,
 * and a tool that caps its input text sees no more than that while the model writes on.
 *
 * @see docs/wire.md "Tools"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolInputStream } from '../../src/agent/tools.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type ScriptedStep, scriptedModel } from './support/models.js';
import { callerFor, readTurn, testService } from './support/wire.js';

let store: TestStore;
const services: Service[] = [];

beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => {
  for (const service of services) await service.close();
  await store?.dispose();
});

/** A tool that writes down what its stream hooks and its execute saw, in order. */
function watchingTool(extra: Partial<ToolInputStream> = {}) {
  const seen: string[] = [];
  const texts: number[] = [];
  return {
    seen,
    texts,
    tool: {
      name: 'note',
      description: 'Keeps a note',
      input: z.object({ text: z.string().max(40_000) }),
      execute: async (input: { text: string }) => {
        seen.push('execute');
        return { kept: input.text.length };
      },
      inputStream: {
        start: () => {
          seen.push('start');
        },
        delta: (text: string) => {
          texts.push(text.length);
        },
        end: () => {
          seen.push('end');
        },
        ...extra,
      },
    },
  };
}

async function turnWith(tool: ReturnType<typeof watchingTool>['tool'], input: object, streamInput: number) {
  const steps: ScriptedStep[] = [
    { toolCalls: [{ id: 'call_note', name: 'note', input, streamInput }] },
    { text: ['Done.'] },
  ];
  const service = await testService(store, { model: scriptedModel(steps).model, tools: [tool] });
  services.push(service);
  return readTurn(
    await callerFor(service.fetch, 'ivy')('/chat', { method: 'POST', json: { message: 'note it' } }),
  );
}

describe('a tool watching its input', () => {
  it('is not told the stream ended once its execute started', async () => {
    const watching = watchingTool();
    await turnWith(watching.tool, { text: 'buy milk' }, 4);
    expect(watching.seen).toEqual(['start', 'execute']);
    expect(watching.texts.length).toBeGreaterThan(1);
  });

  it('is told the stream ended when its execute never ran (the input was refused)', async () => {
    const watching = watchingTool();
    const turn = await turnWith(watching.tool, { text: 42 }, 4);
    expect(watching.seen).toEqual(['start', 'end']);
    expect(turn.chunks.some((c) => c.type === 'tool-output-error')).toBe(true);
  });

  it('sees no more than its `maxText` of a huge input, while execute still gets all of it', async () => {
    const watching = watchingTool({ maxText: 1000 });
    const turn = await turnWith(watching.tool, { text: 'x'.repeat(20_000) }, 100);
    expect(watching.texts.length).toBeGreaterThan(3);
    expect(Math.max(...watching.texts)).toBeLessThanOrEqual(1000);
    // The deltas stopped at the cap: about 1000 / 100 of them, not 200.
    expect(watching.texts.length).toBeLessThanOrEqual(11);
    expect(watching.seen).toEqual(['start', 'execute']);
    const output = turn.chunks.find((c) => c.type === 'tool-output-available') as { output: unknown };
    expect(output.output).toEqual({ kept: 20_000 });
  });
});
