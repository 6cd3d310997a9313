import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createToolRegistry, defineTool, ToolDefinitionError } from './tools.js';

const context = { principal: { subject: 'u' }, via: 'agent' as const, signal: new AbortController().signal };

describe('createToolRegistry', () => {
  it('converts zod inputs to JSON schema and parses with zod', () => {
    const registry = createToolRegistry([
      defineTool({
        name: 'greet',
        description: 'Greets',
        input: z.object({ name: z.string() }),
        execute: ({ name }) => `hi ${name}`,
      }),
    ]);
    const greet = registry.get('greet')!;
    expect(greet.inputSchema).toMatchObject({ type: 'object', properties: { name: { type: 'string' } } });
    expect(greet.parseInput({ name: 'Ada' })).toEqual({ ok: true, value: { name: 'Ada' } });
    const bad = greet.parseInput({ name: 3 });
    expect(bad.ok).toBe(false);
    expect(greet.risk).toBeNull();
    expect(greet.audience).toBe('end-user');
  });

  it('accepts a JSON-schema input and insists only on an object', () => {
    const registry = createToolRegistry([
      { name: 'raw', description: 'Raw', input: { type: 'object', properties: {} }, execute: () => 1 },
    ]);
    expect(registry.get('raw')!.parseInput({ any: 1 }).ok).toBe(true);
    expect(registry.get('raw')!.parseInput([1]).ok).toBe(false);
  });

  it('parks destructive tools by default and lets needsApproval decide per call', async () => {
    const registry = createToolRegistry([
      defineTool({
        name: 'rm',
        description: 'd',
        input: z.object({}),
        risk: 'destructive',
        execute: () => 1,
      }),
      defineTool({ name: 'save', description: 'd', input: z.object({}), risk: 'write', execute: () => 1 }),
      defineTool({
        name: 'pay',
        description: 'd',
        input: z.object({ amount: z.number() }),
        needsApproval: ({ amount }) => amount > 100,
        execute: () => 1,
      }),
    ]);
    expect(await registry.get('rm')!.needsApproval({}, context)).toBe(true);
    expect(await registry.get('save')!.needsApproval({}, context)).toBe(false);
    expect(await registry.get('pay')!.needsApproval({ amount: 500 }, context)).toBe(true);
    expect(await registry.get('pay')!.needsApproval({ amount: 5 }, context)).toBe(false);
  });

  it('lists enabled tools apart from all tools', () => {
    const registry = createToolRegistry([
      defineTool({ name: 'on', description: 'd', input: z.object({}), execute: () => 1 }),
      defineTool({ name: 'off', description: 'd', input: z.object({}), enabled: false, execute: () => 1 }),
    ]);
    expect(registry.all().map((t) => t.name)).toEqual(['on', 'off']);
    expect(registry.enabled().map((t) => t.name)).toEqual(['on']);
  });

  it('refuses malformed tools with a message naming the tool and the fix', () => {
    const make = (tool: object) => () => createToolRegistry([tool as never]);
    expect(make({ name: '9x', description: 'd', input: z.object({}), execute: () => 1 })).toThrow(
      ToolDefinitionError,
    );
    expect(make({ name: 'x', description: 'd', input: z.object({}) })).toThrow(
      /tools\[0\] \(x\)\.execute must be a function/,
    );
    expect(() =>
      createToolRegistry([
        defineTool({ name: 'x', description: 'd', input: z.object({}), execute: () => 1 }),
        defineTool({ name: 'x', description: 'd', input: z.object({}), execute: () => 1 }),
      ]),
    ).toThrow(/tools\[1\] \(x\)\.name is used by two tools/);
    expect(make({ name: 'x', description: 'd', input: { type: 'string' }, execute: () => 1 })).toThrow(
      /type "object"/,
    );
    expect(
      make({ name: 'x', description: 'd', input: z.object({}), audience: 'all', execute: () => 1 }),
    ).toThrow(/audience must be end-user or internal/);
  });
});
