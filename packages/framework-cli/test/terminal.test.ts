/**
 * On a terminal (a real pseudo-terminal), init asks for the brief and for a confirmation, and
 * refine asks before applying its diff; a no writes nothing.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from '@lydell/node-pty';
import { describe, expect, it } from 'vitest';
import { BIN, BUILT, baseEnv, readJson, writeJson } from './support/cli.js';

/** Runs the bin on a terminal, answering each prompt (matched in order) with its line. */
function onTerminal(
  args: string[],
  cwd: string,
  answers: Array<[RegExp, string]>,
): Promise<{ code: number; screen: string }> {
  return new Promise((resolve) => {
    const term = spawn(process.execPath, [BIN, ...args], { cwd, env: baseEnv(), cols: 200, rows: 50 });
    let screen = '';
    let next = 0;
    term.onData((data) => {
      screen += data;
      const answer = answers[next];
      if (answer?.[0].test(screen)) {
        next += 1;
        term.write(`${answer[1]}\r`);
      }
    });
    term.onExit(({ exitCode }) => resolve({ code: exitCode, screen }));
  });
}

function expressApp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fcli-tty-'));
  writeJson(join(dir, 'package.json'), {
    name: 'shop',
    private: true,
    type: 'module',
    dependencies: { express: '*' },
  });
  return dir;
}

describe.skipIf(!BUILT)('service on a terminal', () => {
  it('init asks for the brief, shows the plan and applies on yes', async () => {
    const dir = expressApp();
    const result = await onTerminal(['init'], dir, [
      [/What is the app’s agent for\?/, 'Helps with orders'],
      [/Apply\? \[y\/N\]/, 'y'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toContain('create     service.ts');
    expect(readJson(join(dir, '.service/config.json')).brief).toBe('Helps with orders');
    expect(readFileSync(join(dir, 'service.ts'), 'utf8')).toContain('"Helps with orders"');
  });

  it('init writes nothing on no', async () => {
    const dir = expressApp();
    const result = await onTerminal(['init'], dir, [
      [/agent for\?/, ''],
      [/Apply\? \[y\/N\]/, 'n'],
    ]);
    expect(result.code).toBe(1);
    expect(result.screen).toContain('Nothing written.');
    expect(existsSync(join(dir, '.service'))).toBe(false);
    expect(existsSync(join(dir, '.env'))).toBe(false);
  });

  it.each([
    ['Ctrl+C', '\u0003', /agent for\?/],
    ['Ctrl+D', '\u0004', /agent for\?/],
    ['Ctrl+C at the confirmation', '\u0003', /Apply\? \[y\/N\]/],
  ])('init stops quietly with exit 130 on %s, writing nothing', async (_case, key, prompt) => {
    const dir = expressApp();
    const term = spawn(process.execPath, [BIN, 'init'], { cwd: dir, env: baseEnv(), cols: 200, rows: 50 });
    let screen = '';
    let briefed = false;
    term.onData((data) => {
      screen += data;
      if (!prompt.test(screen)) {
        if (!briefed && /agent for\?/.test(screen)) {
          briefed = true;
          term.write('\r');
        }
        return;
      }
      prompt = /$^/; // answered once
      term.write(key);
    });
    const code = await new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    expect(code, screen).toBe(130);
    expect(screen).not.toMatch(/unexpected error|Aborted/);
    expect(existsSync(join(dir, '.service'))).toBe(false);
  });

  it('refine applies its diff only after a yes', async () => {
    const dir = expressApp();
    writeJson(join(dir, '.service/config.json'), {
      version: 1,
      framework: 'express',
      toolsModule: 'tools.ts',
      modelImport: './ai',
      wiring: [],
    });
    // The model module as init generates it: no model, so the offline demo model answers.
    writeFileSync(join(dir, 'ai.ts'), 'export const model = undefined;\n');
    writeJson(join(dir, '.service/catalog.json'), {
      version: 1,
      tools: [
        {
          name: 'list_orders',
          title: 'list_orders',
          description: 'd',
          risk: 'read',
          audience: 'end-user',
          enabled: true,
          inputSchema: { type: 'object' },
        },
      ],
    });
    const declined = await onTerminal(['refine'], dir, [
      [/Apply to \.service\/overrides\.json\? \[y\/N\]/, 'n'],
    ]);
    expect(declined.code).toBe(0);
    expect(declined.screen).toContain('+      "title": "List orders"');
    expect(existsSync(join(dir, '.service/overrides.json'))).toBe(false);
    const accepted = await onTerminal(['refine'], dir, [
      [/Apply to \.service\/overrides\.json\? \[y\/N\]/, 'y'],
    ]);
    expect(accepted.code).toBe(0);
    expect(readJson(join(dir, '.service/overrides.json'))).toEqual({
      tools: { list_orders: { title: 'List orders' } },
    });
  });
});
