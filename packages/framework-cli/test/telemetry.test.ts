/**
 * Telemetry: one anonymous event per command to SERVICE_TELEMETRY_URL (here a local endpoint),
 * nothing when any opt-out holds, and nothing at all without an endpoint.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { reportCommand, telemetryOptOut } from '../src/telemetry.js';
import { BUILT, baseEnv, runCli } from './support/cli.js';

let endpoint: Server;
let url: string;
let received: unknown[] = [];

/** The environment of a developer's machine with telemetry on: no opt-out of any kind. */
function enabledEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = baseEnv({ SERVICE_TELEMETRY_URL: url });
  delete env.SERVICE_TELEMETRY_DISABLED;
  return { ...(env as Record<string, string>), ...extra };
}

const cwd = () => mkdtempSync(join(tmpdir(), 'svc-fcli-telemetry-'));

describe.skipIf(!BUILT)('telemetry', () => {
  beforeAll(async () => {
    endpoint = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/events`;
  });
  beforeEach(() => {
    received = [];
  });
  afterAll(() => new Promise<void>((resolve) => endpoint.close(() => resolve())));

  it('sends one event naming the command, its exit code and versions, never its arguments', async () => {
    const result = await runCli(['cloud', 'login', 'secret@example.com'], { cwd: cwd(), env: enabledEnv() });
    expect(result.code).toBe(1);
    expect(received).toEqual([
      {
        command: 'cloud',
        exitCode: 1,
        durationMs: expect.any(Number),
        cli: expect.any(String),
        node: process.version,
        platform: process.platform,
      },
    ]);
    expect(JSON.stringify(received)).not.toContain('secret@example.com');
  });

  it.each([
    ['SERVICE_TELEMETRY_DISABLED=1', { SERVICE_TELEMETRY_DISABLED: '1' }],
    ['DO_NOT_TRACK', { DO_NOT_TRACK: '1' }],
    ['CI', { CI: 'true' }],
    ['a production runtime', { NODE_ENV: 'production' }],
  ])('sends nothing under %s', async (_name, extra) => {
    await runCli(['cloud'], { cwd: cwd(), env: enabledEnv(extra) });
    expect(received).toEqual([]);
  });

  it('sends nothing when ~/.service/telemetry.json says optedOut', async () => {
    const env = enabledEnv();
    mkdirSync(join(env.HOME!, '.service'));
    writeFileSync(join(env.HOME!, '.service/telemetry.json'), '{"optedOut": true}\n');
    await runCli(['cloud'], { cwd: cwd(), env });
    expect(received).toEqual([]);
  });

  it('sends nothing without an endpoint, and a dead endpoint never fails a command', async () => {
    const noEndpoint = enabledEnv();
    delete (noEndpoint as Record<string, string | undefined>).SERVICE_TELEMETRY_URL;
    expect(
      (await runCli(['mcp', 'server-json', '--domain', 'example.com'], { cwd: cwd(), env: noEndpoint })).code,
    ).toBe(1);
    expect(received).toEqual([]);
    const dead = await runCli(['cloud'], {
      cwd: cwd(),
      env: enabledEnv({ SERVICE_TELEMETRY_URL: 'http://127.0.0.1:9/x' }),
    });
    expect(dead.code).toBe(1);
    expect(dead.stderr).toMatch(/not available in this version\.\n$/);
  });
});

describe('telemetry without an endpoint', () => {
  it('is off and makes no network attempt at all', async () => {
    const io = {
      stdout: { write: () => true },
      stderr: { write: () => true },
      stdin: process.stdin,
      env: { HOME: mkdtempSync(join(tmpdir(), 'svc-fcli-home-')) },
      cwd: tmpdir(),
    };
    expect(telemetryOptOut(io)).toBe('no endpoint');
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      await reportCommand(io, { command: 'sync', exitCode: 0, durationMs: 1 });
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });
});
