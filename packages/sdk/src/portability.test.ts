import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The SDK's main entry must run in browsers and edge runtimes: no Node-only imports anywhere in it. */
describe('portability', () => {
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? sources(join(dir, entry.name))
        : entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')
          ? [join(dir, entry.name)]
          : [],
    );

  it('imports no node: module, Buffer or process in the SDK or the schemas it bundles', () => {
    const files = [
      ...sources(new URL('.', import.meta.url).pathname),
      ...sources(new URL('../../core/src/schemas', import.meta.url).pathname),
    ];
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      // Code only: comments may name what the code avoids.
      const text = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      expect(text, file).not.toMatch(/from ['"]node:|require\(|\bBuffer\b/);
      // The one access to process.env goes through globalThis, guarded (env.ts).
      expect(text, file).not.toMatch(/\bprocess\./);
    }
  });
});
