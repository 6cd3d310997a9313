import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callHostTool, type HostToolCall } from './tool-call.js';
import { createToolRegistry, defineTool, type Grant } from './tools.js';

const registry = createToolRegistry([
  defineTool({
    name: 'archive',
    description: 'Archives a note',
    input: z.object({ id: z.string() }),
    risk: 'destructive',
    execute: ({ id }, context) => ({ archived: id, grant: context.grant?.id ?? null }),
  }),
  defineTool({
    name: 'whoami',
    description: 'Shows the credentials it was given',
    input: z.object({}),
    execute: (_, context) => context.credentials ?? null,
  }),
  defineTool({
    name: 'boom',
    description: 'Always fails',
    input: z.object({}),
    execute: () => {
      throw new Error('broken');
    },
  }),
]);

const grant: Grant = {
  id: 'grt_1',
  subject: 'ada',
  tool: 'archive',
  scope: 'tool',
  inputHash: null,
  createdAt: new Date(0),
  expiresAt: new Date(0),
};

function harness(grants: Grant[] = []) {
  const events: Array<[string | null, string, Record<string, unknown>]> = [];
  const deps = {
    grants: { find: async (_owner: string, tool: string) => grants.find((g) => g.tool === tool) ?? null },
    audit: {
      record: (owner: string | null, kind: string, data: Record<string, unknown> = {}) =>
        events.push([owner, kind, data]),
    },
  };
  const call = (tool: string, input: unknown, extra: Partial<HostToolCall> = {}) =>
    callHostTool(deps, {
      tool: registry.get(tool)!,
      input,
      owner: 'ada',
      context: { principal: { subject: 'ada' }, via: 'agent', signal: new AbortController().signal },
      audit: { grantUsed: { runId: 'r' }, called: { runId: 'r', toolCallId: 't' } },
      approve: async () => null,
      ...extra,
    });
  return { events, call };
}

describe('callHostTool', () => {
  it('runs a call a grant covers, and records the grant and the call', async () => {
    const { events, call } = harness([grant]);
    expect(await call('archive', { id: 'n1' })).toEqual({
      status: 'ok',
      output: { archived: 'n1', grant: 'grt_1' },
    });
    expect(events).toEqual([
      ['ada', 'grant.used', { grantId: 'grt_1', tool: 'archive', runId: 'r' }],
      ['ada', 'tool.called', { tool: 'archive', runId: 'r', toolCallId: 't', ok: true }],
    ]);
  });

  it('leaves a call without a grant to approve(): refused, or run and then marked executed', async () => {
    const refused = harness();
    expect(await refused.call('archive', { id: 'n1' })).toEqual({ status: 'approval-required' });
    expect(refused.events).toEqual([]);

    const approved = harness();
    const steps: string[] = [];
    const outcome = await approved.call(
      'archive',
      { id: 'n2' },
      { approve: async () => ({ markExecuted: async () => void steps.push('executed') }) },
    );
    expect(outcome).toEqual({ status: 'ok', output: { archived: 'n2', grant: null } });
    expect(steps).toEqual(['executed']);
    expect(approved.events.map((e) => e[1])).toEqual(['tool.called']);
  });

  it('refuses invalid input and failed credentials before anything runs or is recorded', async () => {
    const { events, call } = harness([grant]);
    expect(await call('archive', { id: 3 })).toMatchObject({ status: 'invalid-input' });
    const refusal = new Error('no');
    expect(
      await call(
        'archive',
        { id: 'n1' },
        {
          credentials: async () => {
            throw refusal;
          },
        },
      ),
    ).toEqual({ status: 'no-credentials', error: refusal });
    expect(events).toEqual([]);
  });

  it('hands the tool the credentials, and reports a throw as a failed call on the record', async () => {
    const { events, call } = harness();
    const credentials = async () => ({ headers: { authorization: 'Bearer host' } });
    expect(await call('whoami', {}, { credentials })).toEqual({
      status: 'ok',
      output: { headers: { authorization: 'Bearer host' } },
    });
    expect(await call('boom', {})).toMatchObject({ status: 'failed', error: new Error('broken') });
    expect(events.at(-1)).toEqual([
      'ada',
      'tool.called',
      { tool: 'boom', runId: 'r', toolCallId: 't', ok: false },
    ]);
  });
});
