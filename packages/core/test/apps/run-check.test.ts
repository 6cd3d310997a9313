/**
 * checkAgainstRun: a validated document against one real result per query. A binding whose path
 * the data does not have is reported at the binding; present data passes.
 */
import { describe, expect, it } from 'vitest';
import { checkAgainstRun, validateDocument } from '../../src/apps/index.js';
import { documentWith, goodResults, TOOLS, validGoodDocument } from './fixtures.js';

function valid(document: unknown) {
  const result = validateDocument(document, { tools: TOOLS });
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.document;
}

describe('checkAgainstRun', () => {
  it('passes a document whose every binding is in the data', () => {
    expect(checkAgainstRun(validGoodDocument(), goodResults())).toEqual({ ok: true });
  });

  it('reports a bound field the tool left out, saying where the data stops', () => {
    const results = goodResults();
    (results.orders as { items: unknown[] }).items[0] = {
      id: 'o_1',
      status: 'open',
      customer: { name: 'A' },
    };
    expect(checkAgainstRun(validGoodDocument(), results)).toEqual({
      ok: false,
      problems: [
        {
          path: 'root.children[2].props.amount',
          message: 'query "orders" returned no "items[0].total_cents": the data stops at "items[0]"',
        },
        {
          path: 'root.children[3].props.columns[2].field',
          message: 'Table field "total_cents" is in none of the 1 rows query "orders" returned',
        },
      ],
    });
  });

  it('reports a list position past the end of the returned list', () => {
    const results = goodResults();
    (results.orders as { items: unknown[] }).items = [];
    const check = checkAgainstRun(validGoodDocument(), results);
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.problems.map((problem) => problem.path)).toEqual([
        'root.children[2].props.amount',
        'root.children[5].props.action.input.id',
      ]);
      // An empty list has no rows to miss a column: the table itself is fine.
      expect(check.problems[0]!.message).toContain('the data stops at "items"');
    }
  });

  it('reports a query with no result', () => {
    const { revenue: _, ...results } = goodResults();
    expect(checkAgainstRun(validGoodDocument(), results)).toEqual({
      ok: false,
      problems: [{ path: 'queries.revenue', message: 'no result was given for query "revenue"' }],
    });
  });

  it('is the check for tools that declare no output schema', () => {
    const base = documentWith({
      component: 'Stat',
      props: { label: 'L', value: { $query: 'loose', path: 'stats.total' } },
    });
    const document = valid({ ...base, queries: { ...base.queries, loose: { tool: 'untyped' } } });
    expect(checkAgainstRun(document, { ...goodResults(), loose: { stats: { total: 3 } } })).toEqual({
      ok: true,
    });
    const check = checkAgainstRun(document, { ...goodResults(), loose: { stats: 3 } });
    expect(check).toEqual({
      ok: false,
      problems: [
        {
          path: 'root.children[0].props.value',
          message: 'query "loose" returned no "stats.total": the data stops at "stats"',
        },
      ],
    });
  });
});
