import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { CliIo, InputStream } from '../../src/io.js';

/** An io for running commands in-process: a fresh HOME and working folder, captured output. */
export interface TestIo extends CliIo {
  home: string;
  out(): string;
  err(): string;
  opened: string[];
  /** Removes the folders. */
  dispose(): Promise<void>;
}

export async function createTestIo(overrides: Partial<CliIo> = {}): Promise<TestIo> {
  const home = await mkdtemp(join(tmpdir(), 'service-cli-home-'));
  const cwd = await mkdtemp(join(tmpdir(), 'service-cli-cwd-'));
  let out = '';
  let err = '';
  const opened: string[] = [];
  const stdin = new PassThrough() as PassThrough & InputStream;
  return {
    stdout: {
      write: (text) => {
        out += String(text);
        return true;
      },
    },
    stderr: {
      write: (text) => {
        err += String(text);
        return true;
      },
    },
    stdin,
    env: { HOME: home, NO_COLOR: '1' },
    cwd,
    openUrl: async (url) => {
      opened.push(url);
      return false;
    },
    ...overrides,
    home,
    opened,
    out: () => out,
    err: () => err,
    dispose: async () => {
      await rm(home, { recursive: true, force: true });
      await rm(cwd, { recursive: true, force: true });
    },
  };
}

/**
 * Writes `${home}/.service/config.json` as `service login` would (0600 in a 0700 folder): the
 * logged-in state without a browser. `fields` override or add to a complete config.
 */
export async function writeConfigFile(
  io: TestIo,
  config: { apiBase: string; apiKey: string; tenantId: string },
  fields: Record<string, unknown> = {},
): Promise<void> {
  await mkdir(`${io.home}/.service`, { recursive: true, mode: 0o700 });
  await writeFile(
    `${io.home}/.service/config.json`,
    JSON.stringify({
      appId: null,
      issuedToEmail: 'dev@example.test',
      issuedAt: '2030-01-01T00:00:00.000Z',
      ...config,
      ...fields,
    }),
    { mode: 0o600 },
  );
}
