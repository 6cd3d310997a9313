/**
 * Every command block the docs mark runnable, run as a reader would: in the folder `pnpm start`
 * runs in, against a platform booted there. A block is marked by an HTML comment on the line
 * before its opening fence:
 *
 *     <!-- runnable -->
 *     ```sh
 *     curl -s http://localhost:8787/healthz
 *     ```
 *
 * Each block runs in bash with `-euo pipefail`, and `curl` fails on an HTTP error status, so a
 * command that stopped working fails here. Blocks run in document order, one document after
 * another, sharing the booted platform (a block may rely on what an earlier one did).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itWithPrograms } from '../../../packages/core/test/support/programs.js';
import { bootPlatform, freePort, type PlatformProcess } from './support/boot.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MARK = '<!-- runnable -->';

/** The markdown files of the product's docs: the README, `docs/` and each package's README. */
function documents(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(join(dir, entry.name))
        : entry.name.endsWith('.md')
          ? [join(dir, entry.name)]
          : [],
    );
  const readmes = ['packages', 'examples'].flatMap((group) =>
    readdirSync(join(ROOT, group)).map((name) => join(ROOT, group, name, 'README.md')),
  );
  return [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs')), ...readmes].filter((path) => {
    try {
      readFileSync(path);
      return true;
    } catch {
      return false;
    }
  });
}

interface Block {
  file: string;
  line: number;
  code: string;
}

/** The runnable blocks of one markdown text, with the line each starts on. */
function runnableBlocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== MARK) continue;
    const fence = lines[i + 1]?.match(/^(```+)(sh|bash|shell)\s*$/);
    if (!fence) throw new Error(`${file}:${i + 1}: ${MARK} must be followed by a sh code fence`);
    const end = lines.findIndex((line, at) => at > i + 1 && line.startsWith(fence[1] as string));
    if (end < 0) throw new Error(`${file}:${i + 2}: the code fence never closes`);
    blocks.push({ file, line: i + 2, code: lines.slice(i + 2, end).join('\n') });
  }
  return blocks;
}

const blocks = documents().flatMap((file) =>
  runnableBlocks(relative(ROOT, file), readFileSync(file, 'utf8')),
);

let cwd: string;
let port: number;
let platform: PlatformProcess;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'svc-docs-'));
  port = await freePort();
  platform = await bootPlatform(cwd, { PORT: String(port) });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe('runnable blocks in the docs', () => {
  it('finds some (the README quick start is marked)', () => {
    expect(blocks.filter((block) => block.file === 'README.md').length).toBeGreaterThan(0);
  });

  it('refuses a mark that is not followed by a shell block', () => {
    expect(() => runnableBlocks('x.md', `${MARK}\n\`\`\`ts\nlet a = 1;\n\`\`\`\n`)).toThrow(/sh code fence/);
  });

  for (const block of blocks) {
    // A block that calls curl needs it on the machine; without it the block is skipped, with a notice.
    itWithPrograms(
      /\bcurl\b/.test(block.code) ? ['curl'] : [],
      `${block.file}:${block.line} runs`,
      () => {
        const script = [
          // curl fails on an HTTP error status, keeping the body for the message.
          'curl() { command curl --fail-with-body "$@"; }',
          block.code
            .replaceAll('localhost:8787', `localhost:${port}`)
            .replaceAll('127.0.0.1:8787', `127.0.0.1:${port}`),
        ].join('\n');
        try {
          execFileSync('bash', ['-euo', 'pipefail', '-c', script], {
            cwd,
            encoding: 'utf8',
            timeout: 60_000,
            env: { ...process.env, PORT: String(port) },
            stdio: 'pipe',
          });
        } catch (error) {
          const { stdout, stderr } = error as { stdout?: string; stderr?: string };
          throw new Error(
            `${block.file}:${block.line} failed:\n${block.code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`,
          );
        }
      },
      90_000,
    );
  }
});
