import type { z } from 'zod';

export interface IssueFormat {
  /** First path segment, naming where the value came from: `body` gives `body.name: ...`. */
  prefix?: string;
  /** Describe at most this many issues. Default: all of them. */
  limit?: number;
  /** Stands for the path of an issue about the whole value. Default: the message stands alone. */
  emptyPath?: string;
  /** Between a path and its message. Default `: `. */
  separator?: string;
  /** False for schemas whose messages already name their field: messages only. */
  paths?: boolean;
}

/**
 * Zod issues as one line a client can act on: `path: message`, issues joined by `; `.
 *
 * @example describeIssues(error, { prefix: 'body', limit: 5 }) // "body.name: Required; body.age: ..."
 */
export function describeIssues(error: z.ZodError, format: IssueFormat = {}): string {
  const issues = error.issues.slice(0, format.limit);
  if (issues.length === 0) return 'Invalid request';
  return issues.map((issue) => describeIssue(issue, format)).join('; ');
}

function describeIssue(issue: z.ZodError['issues'][number], format: IssueFormat): string {
  if (format.paths === false) return issue.message;
  const segments = format.prefix === undefined ? issue.path : [format.prefix, ...issue.path];
  const path = segments.join('.') || format.emptyPath;
  return path ? `${path}${format.separator ?? ': '}${issue.message}` : issue.message;
}
