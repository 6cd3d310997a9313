/**
 * The repository stands on its own: its docs and source comments point only at files inside it,
 * speak of the product rather than of issue numbers, every relative link and `@see` path in them
 * resolves, and the README's test command is the one `.ci/run` runs. Reads the tracked files
 * (`git ls-files`) and nothing else, so it takes well under a second.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ciTestCommands,
  commentsOf,
  deadLinks,
  deadSeePaths,
  forbiddenMentions,
  type Problem,
  readmeTestCommand,
} from './repo-hygiene.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((path) => path !== '' && existsSync(join(ROOT, path)));
const trackedSet = new Set(tracked);
const trackedFolders = new Set(
  tracked.flatMap((path) =>
    path
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);
const cache = new Map<string, string>();
const read = (path: string) => {
  if (!cache.has(path)) cache.set(path, readFileSync(join(ROOT, path), 'utf8'));
  return cache.get(path) ?? '';
};
const readTracked = (path: string) => (trackedSet.has(path) && path.endsWith('.md') ? read(path) : undefined);
const existsInRepo = (path: string) => {
  const bare = path.replace(/\/$/, '');
  return trackedSet.has(bare) || trackedFolders.has(bare);
};

/** Every tracked markdown page: the README, `docs/`, each package's and example's README, and the rest. */
const pages = tracked.filter((path) => path.endsWith('.md'));
/** Every tracked source file of the packages. */
const sources = tracked.filter(
  (path) => /^packages\/[^/]+\/src\//.test(path) && /\.(ts|tsx|js|mjs|cjs)$/.test(path),
);

const describeProblems = (problems: Problem[]) =>
  problems.map(({ file, line, problem }) => `${file}:${line}: ${problem}`);

describe('the repository stands on its own', () => {
  it("covers the README, docs/, every package and example README, and the packages' sources", () => {
    const readmes = tracked.filter((path) => /^(packages|examples)\/[^/]+\/README\.md$/.test(path));
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/packages.md', ...readmes]));
    expect(readmes.length).toBeGreaterThan(8);
    expect(sources.length).toBeGreaterThan(100);
  });

  it('mentions no file outside the repository and no issue number in docs and READMEs', () => {
    expect(describeProblems(pages.flatMap((page) => forbiddenMentions(page, read(page))))).toEqual([]);
  });

  it('mentions no file outside the repository and no issue number in source comments', () => {
    const problems = sources.flatMap((source) => forbiddenMentions(source, commentsOf(read(source))));
    expect(describeProblems(problems)).toEqual([]);
  });

  it('names only existing repository paths in @see', () => {
    const problems = sources.flatMap((source) => deadSeePaths(source, read(source), existsInRepo));
    expect(describeProblems(problems)).toEqual([]);
  });

  it('has every relative markdown link resolve, anchors included', () => {
    const problems = pages.flatMap((page) => deadLinks(page, read(page), readTracked, existsInRepo));
    expect(describeProblems(problems)).toEqual([]);
  });

  it('gives in the README the test command .ci/run runs', () => {
    const command = readmeTestCommand(read('README.md'));
    expect(command).toBeDefined();
    expect(ciTestCommands(read('.ci/run'))).toContain(command);
  });
});

describe('the checks find what they look for', () => {
  it('finds outside files and issue numbers', () => {
    const text = 'See ../shared/DESIGN.md and platform-spec.md (issue 12, issue #3).\nFine: issue a key.';
    expect(forbiddenMentions('x.md', text).map((p) => p.problem.split('"')[1])).toEqual([
      '../shared',
      'platform-spec.md',
      'DESIGN.md',
      'issue 12',
      'issue #3',
    ]);
  });

  it('reads comments only in sources', () => {
    const source = "const url = 'platform-spec';\n// see issue 4\n/* DESIGN.md */ run();\n";
    expect(forbiddenMentions('a.ts', commentsOf(source)).map((p) => p.line)).toEqual([3, 2]);
  });

  it('finds @see paths that do not exist, and leaves RFCs, MCP names and URLs alone', () => {
    const source = [
      '/** @see docs/wire.md "Channels"; RFC 6749 §4.1 */',
      '/** @see MCP "Tools" §Tool Annotations */',
      '/** @see https://example.com/a/b */',
      '/** @see docs/gone.md, docs/wire.md */',
    ].join('\n');
    const problems = deadSeePaths('s.ts', source, (path) => path === 'docs/wire.md');
    expect(describeProblems(problems)).toEqual(['s.ts:4: @see docs/gone.md: no such path']);
  });

  it('finds dead relative links and anchors, outside code', () => {
    const pagesByPath: Record<string, string> = { 'docs/b.md': '# B\n\n## Set up `pnpm` here\n' };
    const markdown = [
      '# A',
      '[ok](b.md#set-up-pnpm-here) [self](#a) [web](https://example.com/x.md)',
      '[gone](missing.md) [anchor](b.md#nowhere) [out](../../outside.md)',
      '`[code](nope.md)`',
      '```md',
      '[fenced](nope.md)',
      '```',
      '[ref]: other-missing.md',
    ].join('\n');
    const problems = deadLinks(
      'docs/a.md',
      markdown,
      (path) => pagesByPath[path],
      (path) => path in pagesByPath,
    );
    expect(describeProblems(problems)).toEqual([
      'docs/a.md:3: link "missing.md": no such file or folder',
      'docs/a.md:3: link "b.md#nowhere": no heading with the anchor #nowhere',
      'docs/a.md:3: link "../../outside.md": points outside the repository',
      'docs/a.md:8: link "other-missing.md": no such file or folder',
    ]);
  });

  it('tells a README test command .ci/run does not run', () => {
    const readme = '```sh\nnpm i && pnpm test    # runs every test\n```\n';
    expect(readmeTestCommand(readme)).toBe('npm i && pnpm test');
    expect(ciTestCommands("run_tests bash -c 'npm ci && pnpm test'\n")).not.toContain('npm i && pnpm test');
  });
});
