import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeIssues } from './issues.js';

const schema = z.object({ name: z.string('must be a string'), age: z.number('must be a number') });
const error = schema.safeParse({ name: 1, age: 'x' }).error!;
const whole = z.object({}).safeParse(null).error!;

describe('describeIssues', () => {
  it('joins every issue as path: message', () => {
    expect(describeIssues(error)).toBe('name: must be a string; age: must be a number');
  });

  it('prefixes paths, limits the count, names an empty path, changes the separator, or drops paths', () => {
    expect(describeIssues(error, { prefix: 'body', limit: 1 })).toBe('body.name: must be a string');
    expect(describeIssues(whole, { emptyPath: 'options', separator: ' ' })).toMatch(/^options /);
    expect(describeIssues(whole)).not.toMatch(/^:/);
    expect(describeIssues(error, { limit: 1, paths: false })).toBe('must be a string');
  });
});
