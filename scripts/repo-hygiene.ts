/**
 * The checks of `repo-hygiene.test.ts`: mentions of files outside the repository and of issue
 * numbers, dead relative links and anchors in markdown, dead `@see` paths in sources, and the
 * README's test command against `.ci/run`'s. Pure functions over texts, so each can be tried on
 * a made-up input.
 */
import { dirname, join, normalize } from 'node:path';

/** What a repository file must not mention: files outside the repository, and issue numbers. */
const FORBIDDEN: { pattern: RegExp; why: string }[] = [
  { pattern: /\.\.\/shared\b/, why: 'a folder outside the repository' },
  { pattern: /\/work\/shared\b/, why: 'a folder outside the repository' },
  { pattern: /platform-spec(\.md)?\b/, why: 'a file outside the repository' },
  { pattern: /\b(DESIGN|STYLE|REFERENCE)\.md\b/, why: 'a file outside the repository' },
  { pattern: /\bissues? #?\d+|\bissue #/i, why: 'an issue number' },
];

export interface Problem {
  file: string;
  line: number;
  problem: string;
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** Each forbidden mention in `text` (a markdown page, or the comments of a source file). */
export function forbiddenMentions(file: string, text: string): Problem[] {
  const problems: Problem[] = [];
  for (const { pattern, why } of FORBIDDEN) {
    for (const match of text.matchAll(new RegExp(pattern.source, `${pattern.flags}g`))) {
      problems.push({ file, line: lineOf(text, match.index), problem: `"${match[0]}": ${why}` });
    }
  }
  return problems;
}

/** The comments of a TypeScript source, each line kept in place (code lines become blank). */
export function commentsOf(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|[^\n]/g, (part) => (part.length > 1 ? part : ' '));
}

/** GitHub's anchor for a heading text. */
export function slugOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** A markdown text without its fenced code blocks and inline code (lines kept in place). */
function proseOf(markdown: string): string {
  return markdown
    .replace(/^(\s*)(```|~~~)[\s\S]*?^\s*\2/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
}

/** The anchors a markdown page offers: its headings' (numbered when repeated) and HTML ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const prose = markdown.replace(/^(\s*)(```|~~~)[\s\S]*?^\s*\2/gm, '');
  for (const [, heading] of prose.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const slug = slugOf(heading ?? '');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of prose.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id ?? '');
  return anchors;
}

/** Whether a link target points outside this repository's files (a URL, a mail address). */
const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** Each relative link (inline, image or reference definition) of a markdown page that does not resolve. */
export function deadLinks(
  file: string,
  markdown: string,
  read: (path: string) => string | undefined,
  exists: (path: string) => boolean,
): Problem[] {
  const prose = proseOf(markdown);
  const problems: Problem[] = [];
  const links = [
    ...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g),
    ...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm),
  ];
  for (const link of links) {
    const target = link[1] ?? '';
    if (isExternal(target)) continue;
    const [path = '', anchor] = target.split('#');
    const resolved = path === '' ? file : normalize(join(dirname(file), decodeURI(path)));
    const problem = (why: string) =>
      problems.push({ file, line: lineOf(prose, link.index), problem: `link "${target}": ${why}` });
    if (resolved.startsWith('..')) {
      problem('points outside the repository');
      continue;
    }
    const text = path === '' ? markdown : read(resolved);
    if (text === undefined) {
      if (!exists(resolved)) problem('no such file or folder');
      else if (anchor) problem('an anchor into something other than a markdown page');
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchorsOf(text).has(anchor)) {
      problem(`no heading with the anchor #${anchor}`);
    }
  }
  return problems;
}

/** Each `@see` in a source's comments naming a repository path that does not exist. */
export function deadSeePaths(file: string, source: string, exists: (path: string) => boolean): Problem[] {
  const problems: Problem[] = [];
  for (const see of source.matchAll(/@see\s+([^\n]*)/g)) {
    for (const token of (see[1] ?? '').split(/[\s,;]+/)) {
      const path = token.replace(/^["'`(]+|["'`).:]+$/g, '');
      if (isExternal(path) || !/^[\w@.-]+(\/[\w@.-]+)+\/?$/.test(path)) continue;
      if (!exists(path)) {
        problems.push({ file, line: lineOf(source, see.index), problem: `@see ${path}: no such path` });
      }
    }
  }
  return problems;
}

/** The command of a shell line, without its trailing `# comment`. */
const commandOf = (line: string) => line.replace(/\s+#.*$/, '').trim();

/** The README's test command: the `sh` block line that runs `pnpm test`. */
export function readmeTestCommand(readme: string): string | undefined {
  for (const [, block] of readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)) {
    for (const line of (block ?? '').split('\n')) {
      if (/(^|&&\s*)pnpm test$/.test(commandOf(line))) return commandOf(line);
    }
  }
  return undefined;
}

/** The test commands `.ci/run` hands to `run_tests bash -c '…'`. */
export function ciTestCommands(script: string): string[] {
  return [...script.matchAll(/^\s*run_tests bash -c '([^']*)'/gm)].map((match) => match[1] ?? '');
}
