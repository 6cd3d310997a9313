/**
 * A turn whose chunk writes start failing (its thread deleted under it, or a store blip) keeps
 * streaming from memory and ends; the process keeps answering. Run in a child process: a process
 * that froze on this could not even time out a test in its own thread.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TSX_LOADER } from '../support/spawn.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./support/delete-mid-stream.ts', import.meta.url));

describe('a thread deleted while its turn streams', () => {
  it('ends the run and leaves the process answering', async () => {
    const child = spawn(process.execPath, ['--import', TSX_LOADER, SCRIPT], {
      env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(false);
      }, 20_000);
      child.on('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    expect(exited, `the process froze:\n${output}`).toBe(true);
    const report = JSON.parse(output.match(/REPORT (.*)/)?.[1] ?? 'null');
    expect(report, output).toEqual({ deleted: 200, status: 200, runs: 200 });
  }, 30_000);
});
