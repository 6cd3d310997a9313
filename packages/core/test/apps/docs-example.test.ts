/** The example document of docs/apps.md is valid, and the problems the page quotes are the ones it gets. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateDocument } from '../../src/apps/index.js';
import { TOOLS } from './fixtures.js';

const page = readFileSync(new URL('../../../../docs/apps.md', import.meta.url), 'utf8');
const blocks = [...page.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((match) => ({
  lang: match[1],
  text: match[2]!,
}));
const example = () => JSON.parse(blocks.find((block) => block.lang === 'json')!.text);

function problemLines(document: unknown): string[] {
  const result = validateDocument(document, { tools: TOOLS });
  return result.ok ? [] : result.problems.map((problem) => `${problem.path}: ${problem.message}`);
}

describe('docs/apps.md', () => {
  it('shows a document that passes', () => {
    expect(problemLines(example())).toEqual([]);
  });

  it('quotes the problems a spoiled example gets', () => {
    const quoted = blocks
      .find((block) => block.text.startsWith('root.children'))!
      .text.trim()
      .split('\n');
    const unknownField = example();
    unknownField.root.children[0].props.value.path = 'total';
    const writeQuery = example();
    writeQuery.queries.refunds = { tool: 'refund_order' };
    const unknownColumn = example();
    unknownColumn.root.children[1].props.columns[1].field = 'customer.phone';
    expect([
      ...problemLines(unknownField),
      ...problemLines(writeQuery),
      ...problemLines(unknownColumn),
    ]).toEqual(quoted);
  });
});
