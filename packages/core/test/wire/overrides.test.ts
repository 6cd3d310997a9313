/**
 * `.service/overrides.json` curation of the agent's menu, and keepalive comments while a turn is
 * silent.
 *
 * @see docs/wire.md "Turns"
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Logger } from '../../src/http/logger.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { callerFor, readTurn, testService } from './support/wire.js';

let store: TestStore;
let dir: string;
const services: Service[] = [];
const tools = ['alpha', 'beta', 'gamma'].map((name) => ({
  name,
  description: `Tool ${name}`,
  input: z.object({}),
  enabled: name !== 'gamma',
  execute: () => name,
}));

beforeAll(async () => {
  store = await openTestStore();
  dir = mkdtempSync(join(tmpdir(), 'svc-overrides-'));
});
afterAll(async () => {
  for (const service of services) await service.close();
  await store?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

function recordingLogger() {
  const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
  const logger: Logger = {
    info: () => {},
    error: () => {},
    warn: (message, fields) => warnings.push({ message, ...(fields ? { fields } : {}) }),
  };
  return { logger, warnings };
}

describe('overrides', () => {
  it('limits the agent’s menu to surfaces.agent (never the service’s own tools) and warns once per missing or disabled tool', async () => {
    const path = join(dir, 'overrides.json');
    writeFileSync(path, JSON.stringify({ surfaces: { agent: ['beta', 'gamma', 'ghost'] } }));
    const { logger, warnings } = recordingLogger();
    const scripted = scriptedModel([{ text: ['ok'] }]);
    const service = await testService(store, {
      model: scripted.model,
      tools,
      logger,
      overrides: undefined,
      env: { SERVICE_OVERRIDES_PATH: path },
    });
    services.push(service);
    await readTurn(
      await callerFor(service.fetch, 'una')('/chat', { method: 'POST', json: { message: 'hi' } }),
    );
    const offered = scripted.calls[0]!.tools?.map((t) => t.name) ?? [];
    expect(offered.filter((name) => !name.startsWith('service_'))).toEqual(['beta']);
    expect(offered).toContain('service_make');
    expect(warnings.map((w) => w.fields?.tool)).toEqual(['gamma', 'ghost']);
  });

  it('offers every enabled tool without overrides', async () => {
    const scripted = scriptedModel([{ text: ['ok'] }]);
    const service = await testService(store, { model: scripted.model, tools, apps: false });
    services.push(service);
    await readTurn(
      await callerFor(service.fetch, 'vic')('/chat', { method: 'POST', json: { message: 'hi' } }),
    );
    expect(scripted.calls[0]!.tools?.map((t) => t.name)).toEqual(['alpha', 'beta']);
  });

  it('refuses surfaces other than agent and mcp, and a file that is not JSON', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ surfaces: { web: ['alpha'] } }));
    await expect(
      testService(store, { tools, overrides: undefined, env: { SERVICE_OVERRIDES_PATH: bad } }),
    ).rejects.toThrow(/surfaces accepts only agent and mcp/);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ nope');
    await expect(
      testService(store, { tools, overrides: undefined, env: { SERVICE_OVERRIDES_PATH: broken } }),
    ).rejects.toThrow(/is not valid JSON: fix or remove it/);
  });
});

describe('keepalive', () => {
  it('sends a keepalive comment at once and after each silence of heartbeatMs', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const service = await testService(store, {
      heartbeatMs: 100,
      model: scriptedModel([{ toolCalls: [{ id: 'w', name: 'wait', input: {} }] }, { text: ['done'] }]).model,
      tools: [
        { name: 'wait', description: 'Waits', input: z.object({}), execute: () => gate.then(() => 'waited') },
      ],
    });
    services.push(service);
    const response = await callerFor(service.fetch, 'wes')('/chat', {
      method: 'POST',
      json: { message: 'wait' },
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const started = Date.now();
    setTimeout(release, 450);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(text.startsWith(': keepalive\n\n')).toBe(true);
    // About four silences of 100 ms while the tool waits, besides the first one.
    expect(text.match(/^: keepalive$/gm)!.length).toBeGreaterThanOrEqual(3);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
