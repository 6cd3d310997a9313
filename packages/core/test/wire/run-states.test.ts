/**
 * Run states that tell the truth, black-box over a real Express server on loopback: a denied,
 * expired or failing tool call is the tool's result (an error the model reads and answers, the
 * client sees on the call), and the run still ends `completed`; `failed` means the model call
 * itself failed.
 *
 * @see docs/wire.md "Run states"
 */
import type { UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { HostTool } from '../../src/agent/tools.js';
import type { Service } from '../../src/wire/create-service.js';
import type { ServiceOptions } from '../../src/wire/options.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type ScriptedStep, scriptedModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import {
  assemble,
  callerFor,
  readTurn,
  readUntilPaused,
  resumeAfter,
  TurnReader,
  testService,
  textOf,
} from './support/wire.js';

/** A tool that fails the way host code does: an Error with a message, and a stack behind it. */
function failingTool(message: string): HostTool<{ id: string }, unknown> {
  return {
    name: 'lookup',
    description: 'Looks an order up',
    input: z.object({ id: z.string() }),
    risk: 'read',
    execute: async () => {
      throw new Error(message);
    },
  };
}

const guarded: HostTool<Record<string, never>, unknown> = {
  name: 'wipe',
  description: 'Wipes everything',
  input: z.object({}),
  needsApproval: true,
  execute: async () => 'wiped',
};

for (const kind of STORE_KINDS) {
  describe(`run states (${kind})`, () => {
    let store: TestStore;
    const services: Service[] = [];
    const transports: Transport[] = [];
    let users = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => {
      for (const t of transports) await t.close();
      for (const s of services) await s.close();
      await store?.dispose();
    });

    async function setup(steps: ScriptedStep[], options: Partial<ServiceOptions>) {
      const scripted = scriptedModel(steps);
      const service = await testService(store, { model: scripted.model, ...options });
      services.push(service);
      const transport = await connect('express', service);
      transports.push(transport);
      return { calls: scripted.calls, call: callerFor(transport.fetch, `user-states-${kind}-${++users}`) };
    }

    async function runOf(call: ReturnType<typeof callerFor>, runId: string) {
      return (await (await call(`/runs/${runId}`)).json()).run;
    }

    it('answers a denied call with the denial: tool-output-denied, the model reads why, the run completes', async () => {
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'x1', name: 'wipe', input: {} }] }, { text: ['Understood, not wiping.'] }],
        { tools: [guarded] },
      );
      const response = await call('/chat', { method: 'POST', json: { id: 'denied', message: 'wipe it' } });
      const runId = response.headers.get('x-service-run-id')!;
      const paused = await readUntilPaused(new TurnReader(response));
      await call(`/approvals/${paused.approvalIds[0]}/decide`, {
        method: 'POST',
        json: { decision: 'deny' },
      });
      const chunks = (await resumeAfter(call, 'denied', paused.resumeAfter)).map((f) => f.chunk);

      expect(chunks).toContainEqual({ type: 'tool-output-denied', toolCallId: 'x1' });
      expect(chunks.some((c) => c.type === 'error')).toBe(false);
      expect(JSON.stringify(calls[1]!.prompt)).toContain('The user denied this call.');
      expect(chunks.at(-1)).toMatchObject({ type: 'finish', messageMetadata: { status: 'completed' } });
      expect(await runOf(call, runId)).toMatchObject({ status: 'completed', error: null });
    });

    it('answers an expired approval with the expiry and completes the run', async () => {
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'x2', name: 'wipe', input: {} }] }, { text: ['Nobody answered.'] }],
        { tools: [guarded], approvalTtlMs: 150 },
      );
      const response = await call('/chat', { method: 'POST', json: { id: 'expired', message: 'wipe it' } });
      const runId = response.headers.get('x-service-run-id')!;
      // Nobody answers: the stream ends at the pause, the run goes on by itself once it expires.
      const paused = await readUntilPaused(new TurnReader(response));
      const chunks = [...paused.frames, ...(await resumeAfter(call, 'expired', paused.resumeAfter))].map(
        (f) => f.chunk,
      );
      const turn = { chunks, message: await assemble(chunks) };

      const ended = turn.chunks.find((c) => c.type.startsWith('tool-output'));
      expect(ended).toEqual({
        type: 'tool-output-error',
        toolCallId: 'x2',
        errorText: 'The approval expired.',
      });
      expect(JSON.stringify(calls[1]!.prompt)).toContain('The approval expired.');
      expect(textOf(turn.message)).toBe('Nobody answered.');
      expect(await runOf(call, runId)).toMatchObject({ status: 'completed', error: null });
    });

    it("gives the model and the client a throwing tool's own message, never its stack, and completes", async () => {
      const { call, calls } = await setup(
        [
          { toolCalls: [{ id: 'l1', name: 'lookup', input: { id: '42' } }] },
          { text: ['That order does not exist.'] },
        ],
        { tools: [failingTool('Order 42 not found')] },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'where is order 42?' } });
      const runId = response.headers.get('x-service-run-id')!;
      const turn = await readTurn(response);

      const output = turn.chunks.find((c) => c.type === 'tool-output-error') as
        | Extract<UIMessageChunk, { type: 'tool-output-error' }>
        | undefined;
      expect(output).toMatchObject({ toolCallId: 'l1', errorText: 'Order 42 not found' });
      expect(turn.chunks.some((c) => c.type === 'error')).toBe(false);
      expect(turn.message?.parts.find((p) => p.type === 'tool-lookup')).toMatchObject({
        state: 'output-error',
        errorText: 'Order 42 not found',
      });
      const prompt = JSON.stringify(calls[1]!.prompt);
      expect(prompt).toContain('Order 42 not found');
      expect(prompt).not.toContain('run-states.test');
      expect(textOf(turn.message)).toBe('That order does not exist.');
      expect(await runOf(call, runId)).toMatchObject({ status: 'completed', error: null });
    });

    it('cuts a very long tool error message short', async () => {
      const { call } = await setup(
        [{ toolCalls: [{ id: 'l2', name: 'lookup', input: { id: '1' } }] }, { text: ['Sorry.'] }],
        { tools: [failingTool(`Upstream said: ${'x'.repeat(5000)}`)] },
      );
      const turn = await readTurn(await call('/chat', { method: 'POST', json: { message: 'order 1?' } }));
      const output = turn.chunks.find((c) => c.type === 'tool-output-error') as { errorText: string };
      expect(output.errorText.startsWith('Upstream said: xxx')).toBe(true);
      expect(output.errorText.length).toBeLessThanOrEqual(1000);
      expect(output.errorText.endsWith('…')).toBe(true);
    });

    it('answers a call with invalid input with the validation error, and the model goes on', async () => {
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'l4', name: 'lookup', input: { id: 42 } }] }, { text: ['Let me fix that.'] }],
        { tools: [failingTool('unreachable')] },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'order 42?' } });
      const runId = response.headers.get('x-service-run-id')!;
      const turn = await readTurn(response);
      expect(turn.chunks.find((c) => c.type === 'tool-output-error')).toMatchObject({
        toolCallId: 'l4',
        errorText: expect.stringContaining('Invalid input for lookup'),
      });
      expect(turn.chunks.some((c) => c.type === 'error')).toBe(false);
      expect(JSON.stringify(calls[1]!.prompt)).toContain('Invalid input for lookup');
      expect(textOf(turn.message)).toBe('Let me fix that.');
      expect(await runOf(call, runId)).toMatchObject({ status: 'completed', error: null });
    });

    it('answers a call of a tool that does not exist with the error, and the model goes on', async () => {
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'n1', name: 'nope', input: {} }] }, { text: ['Sorry, no such tool.'] }],
        { tools: [failingTool('unreachable')] },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'use nope' } });
      const runId = response.headers.get('x-service-run-id')!;
      const turn = await readTurn(response);
      expect(turn.chunks.find((c) => c.type === 'tool-input-error')).toMatchObject({
        toolCallId: 'n1',
        errorText: expect.stringContaining('nope'),
      });
      expect(turn.chunks.some((c) => c.type === 'error')).toBe(false);
      expect(JSON.stringify(calls[1]!.prompt)).toContain('nope');
      expect(textOf(turn.message)).toBe('Sorry, no such tool.');
      expect(await runOf(call, runId)).toMatchObject({ status: 'completed', error: null });
    });

    it('fails the run only when the model call fails', async () => {
      const { call } = await setup(
        [
          { toolCalls: [{ id: 'l3', name: 'lookup', input: { id: '7' } }] },
          { error: new Error('provider down sk-9') },
        ],
        { tools: [failingTool('Order 7 not found')] },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'order 7?' } });
      const runId = response.headers.get('x-service-run-id')!;
      const turn = await readTurn(response);
      expect(turn.chunks.find((c) => c.type === 'tool-output-error')).toMatchObject({
        errorText: 'Order 7 not found',
      });
      const errors = turn.chunks.filter((c) => c.type === 'error');
      expect(errors).toHaveLength(1);
      expect(JSON.stringify(errors)).toContain('The model call failed');
      expect(JSON.stringify(errors)).not.toContain('sk-9');
      expect(await runOf(call, runId)).toMatchObject({ status: 'failed', error: { code: 'model_error' } });
    });
  });
}
