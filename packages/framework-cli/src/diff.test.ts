/** The unified diff refine shows must be one `patch` applies: checked with patch(1) itself. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { itWithPrograms } from '../../core/test/support/programs.js';
import { unifiedDiff } from './diff.js';

function applies(before: string, after: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-diff-'));
  writeFileSync(join(dir, 'f.txt'), before);
  const diff = unifiedDiff('f.txt', before, after);
  execFileSync('patch', ['-p1', '-s', '--no-backup-if-mismatch'], { cwd: dir, input: diff });
  return readFileSync(join(dir, 'f.txt'), 'utf8');
}

describe('unifiedDiff', () => {
  it('is empty for equal texts and shows a change with its context', () => {
    expect(unifiedDiff('x', 'a\n', 'a\n')).toBe('');
    expect(unifiedDiff('x', 'a\nb\nc\n', 'a\nB\nc\n')).toBe(
      '--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
    );
    expect(unifiedDiff('x', '', '{}\n')).toBe('--- a/x\n+++ b/x\n@@ -0,0 +1,1 @@\n+{}\n');
  });

  itWithPrograms(['patch'], 'produces diffs patch(1) applies to the old text to give the new', () => {
    const lines = fc.array(fc.constantFrom('a', 'b', 'c', 'd', '{', '}'), { maxLength: 30 });
    const text = lines.map((l) => (l.length ? `${l.join('\n')}\n` : ''));
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(applies(before, after)).toBe(after);
      }),
      { numRuns: 60 },
    );
  });
});
