/**
 * validateDocument: each rule refuses a document that breaks it, with a problem at the right
 * path in words the agent can act on, and accepts the same document once it is fixed.
 */
import { describe, expect, it } from 'vitest';
import { APP_DOCUMENT_LIMITS, type Problem, validateDocument } from '../../src/apps/index.js';
import { documentWith, goodDocument, TOOLS } from './fixtures.js';

function problemsOf(document: unknown, tools = TOOLS): Problem[] {
  const result = validateDocument(document, { tools });
  return result.ok ? [] : result.problems;
}

/** Asserts exactly one problem, at `path`, whose message holds every fragment. */
function expectOneProblem(document: unknown, path: string, ...fragments: string[]): void {
  const problems = problemsOf(document);
  expect(problems).toHaveLength(1);
  expect(problems[0]!.path).toBe(path);
  for (const fragment of fragments) expect(problems[0]!.message).toContain(fragment);
}

const stat = (value: unknown) => ({ component: 'Stat', props: { label: 'L', value } });

describe('validateDocument', () => {
  it('accepts a document that keeps every rule, and hands it back parsed', () => {
    const result = validateDocument(goodDocument(), { tools: TOOLS });
    expect(result).toEqual({ ok: true, document: goodDocument() });
    const bare = validateDocument(
      { version: 1, title: 'Hi', root: { component: 'Text', props: { text: 'hi' } } },
      { tools: {} },
    );
    expect(bare.ok && bare.document.queries).toEqual({});
  });

  describe('caps', () => {
    it('refuses a document over the byte cap before reading its schema', () => {
      const big = { ...goodDocument(), title: 'x'.repeat(APP_DOCUMENT_LIMITS.maxBytes) };
      expect(problemsOf(big)).toEqual([{ path: '', message: expect.stringMatching(/bytes; at most 65536/) }]);
    });

    it('refuses a tree with too many nodes, and accepts one at the cap', () => {
      const leaves = (n: number) =>
        Array.from({ length: n }, () => ({ component: 'Text', props: { text: '' } }));
      const over = {
        version: 1,
        title: 'T',
        root: { component: 'Stack', children: leaves(APP_DOCUMENT_LIMITS.maxNodes) },
      };
      expect(problemsOf(over)).toEqual([
        { path: 'root', message: `the tree has more than ${APP_DOCUMENT_LIMITS.maxNodes} nodes` },
      ]);
      const at = { ...over, root: { ...over.root, children: leaves(APP_DOCUMENT_LIMITS.maxNodes - 1) } };
      expect(problemsOf(at)).toEqual([]);
    });

    it('refuses a tree deeper than the cap, and accepts one at it', () => {
      const tower = (levels: number): unknown =>
        levels === 1
          ? { component: 'Text', props: { text: 'top' } }
          : { component: 'Stack', children: [tower(levels - 1)] };
      const over = { version: 1, title: 'T', root: tower(APP_DOCUMENT_LIMITS.maxDepth + 1) };
      expect(problemsOf(over)).toEqual([
        { path: 'root', message: `the tree is deeper than ${APP_DOCUMENT_LIMITS.maxDepth} levels` },
      ]);
      expect(problemsOf({ ...over, root: tower(APP_DOCUMENT_LIMITS.maxDepth) })).toEqual([]);
    });

    it('refuses a hostile nesting (100 000 levels in a prop) cheaply, without overflowing the stack', () => {
      let deep: unknown = 1;
      for (let i = 0; i < 100_000; i++) deep = [deep];
      const started = performance.now();
      const problems = problemsOf(documentWith({ component: 'Text', props: { text: deep } }));
      expect(problems).toEqual([
        { path: '', message: `the document nests deeper than ${APP_DOCUMENT_LIMITS.maxJsonDepth} levels` },
      ]);
      expect(performance.now() - started).toBeLessThan(1000);
    });

    it('refuses more queries than the cap', () => {
      const queries = Object.fromEntries(
        Array.from({ length: APP_DOCUMENT_LIMITS.maxQueries + 1 }, (_, i) => [
          `q${i}`,
          { tool: 'list_orders' },
        ]),
      );
      expectOneProblem(
        { ...goodDocument(), queries },
        'queries',
        `at most ${APP_DOCUMENT_LIMITS.maxQueries} queries`,
      );
    });

    it('lists at most the problem cap, and counts the rest', () => {
      const nodes = Array.from({ length: 80 }, () => ({ component: 'Nope' }));
      const problems = problemsOf(documentWith(...nodes));
      expect(problems).toHaveLength(APP_DOCUMENT_LIMITS.maxProblems + 1);
      expect(problems.at(-1)).toEqual({ path: '', message: 'and 30 more problems not listed' });
    });
  });

  describe('document shape', () => {
    it('refuses another version, a missing title and unknown members', () => {
      expectOneProblem({ ...goodDocument(), version: 2 }, 'version', 'version must be 1');
      expectOneProblem(
        { ...goodDocument(), version: undefined },
        'version',
        'version is missing; it must be 1',
      );
      expectOneProblem({ ...goodDocument(), title: undefined }, 'title', 'title is missing; expected string');
      expectOneProblem({ ...goodDocument(), title: ' ' }, 'title');
      expectOneProblem({ ...goodDocument(), script: 'alert(1)' }, '', 'script');
      expectOneProblem(
        { ...documentWith({ component: 'Text', props: { text: 'a' }, onClick: 'x' }) },
        'root.children[0]',
        'onClick',
      );
    });

    it('refuses a query name that is not an identifier', () => {
      const document = goodDocument();
      const queries = { ...document.queries, 'my orders': { tool: 'list_orders' } };
      expectOneProblem({ ...document, queries }, 'queries.my orders', 'a query name is a letter or _');
    });
  });

  describe('components and props', () => {
    it('refuses an unknown component and names the Kit', () => {
      expectOneProblem(
        documentWith({ component: 'Marquee' }),
        'root.children[0].component',
        'unknown component "Marquee"',
        'Stack, Row, Card',
      );
    });

    it('refuses props that fail the component schema, and accepts them fixed', () => {
      expectOneProblem(
        documentWith({ component: 'Heading', props: { text: 7 } }),
        'root.children[0].props.text',
        'Heading:',
        'expected string',
      );
      expectOneProblem(
        documentWith({ component: 'Stat', props: { value: 3 } }),
        'root.children[0].props.label',
        'Stat:',
      );
      expectOneProblem(
        documentWith({ component: 'Money', props: { amount: 5, currency: 'dollars' } }),
        'root.children[0].props.currency',
        'ISO 4217',
      );
      expect(problemsOf(documentWith({ component: 'Heading', props: { text: '7', level: 2 } }))).toEqual([]);
      expect(problemsOf(documentWith({ component: 'Money', props: { amount: 5, currency: 'EUR' } }))).toEqual(
        [],
      );
    });

    it('refuses a prop the component does not have, naming the ones it has', () => {
      expectOneProblem(
        documentWith({ component: 'Badge', props: { text: 'x', color: 'red' } }),
        'root.children[0].props.color',
        'Badge has no prop "color"',
        'text, tone',
      );
    });

    it('refuses children under a component that takes none', () => {
      const text = { component: 'Text', props: { text: 'a' } };
      expectOneProblem(
        documentWith({ ...text, children: [text] }),
        'root.children[0].children',
        'Text takes no children',
      );
      expect(
        problemsOf(documentWith({ component: 'Card', props: { title: 'c' }, children: [text] })),
      ).toEqual([]);
    });

    it('refuses a binding buried inside a literal prop', () => {
      const columns = [{ field: 'id', label: { $query: 'orders', path: 'count' } }];
      expectOneProblem(
        documentWith({ component: 'Table', props: { rows: { $query: 'orders', path: 'items' }, columns } }),
        'root.children[0].props.columns[0].label',
        'a binding may stand only as a whole prop',
      );
    });

    it('refuses a binding where the value must be written out: actions, columns, row fields', () => {
      const action = { $query: 'orders', path: 'items[0].id' };
      expectOneProblem(
        documentWith({ component: 'Button', props: { label: 'Go', action } }),
        'root.children[0].props.action',
        'Button.action must be written out',
      );
      const columns = { $query: 'orders', path: 'items' };
      expectOneProblem(
        documentWith({ component: 'Table', props: { rows: columns, columns } }),
        'root.children[0].props.columns',
        'Table.columns must be written out',
      );
      const list = { component: 'List', props: { items: columns, primary: { $state: 'tab' } } };
      expectOneProblem(
        documentWith(list),
        'root.children[0].props.primary',
        'List.primary must be written out',
      );
    });

    it('refuses a malformed binding', () => {
      expectOneProblem(
        documentWith(stat({ $query: 'orders', path: 'count', extra: 1 })),
        'root.children[0].props.value',
        'a binding is',
        '"extra"',
      );
      expectOneProblem(
        documentWith(stat({ $state: 'no such' })),
        'root.children[0].props.value',
        'a binding is',
        'a state name is',
      );
      expectOneProblem(
        documentWith(stat({ $query: 'orders', path: 'items..id' })),
        'root.children[0].props.value',
        'not a field path',
      );
    });
  });

  describe('queries', () => {
    it('refuses a query calling a tool the host does not have', () => {
      const document = goodDocument();
      const queries = { ...document.queries, extra: { tool: 'list_invoices' } };
      expectOneProblem(
        { ...document, queries },
        'queries.extra.tool',
        '"list_invoices", which is not a host tool',
        'list_orders, revenue',
      );
    });

    it('refuses a query calling a tool that is not a read tool', () => {
      const document = goodDocument();
      const queries = { ...document.queries, extra: { tool: 'refund_order' } };
      expectOneProblem({ ...document, queries }, 'queries.extra.tool', 'not a read tool', 'Button action');
    });

    it('refuses a binding to a query that does not exist', () => {
      expectOneProblem(
        documentWith(stat({ $query: 'invoices', path: 'count' })),
        'root.children[0].props.value',
        'there is no query "invoices"',
        'orders, revenue',
      );
    });
  });

  describe('bindings against output schemas', () => {
    it('refuses a field the tool does not declare, naming the fields it does', () => {
      expectOneProblem(
        documentWith(stat({ $query: 'orders', path: 'total' })),
        'root.children[0].props.value',
        'returns no "total"; its result has count, items',
      );
      expectOneProblem(
        documentWith(stat({ $query: 'orders', path: 'items[0].customer.email' })),
        'root.children[0].props.value',
        'returns no "email" in "items[0].customer"; that has name',
      );
      expect(problemsOf(documentWith(stat({ $query: 'orders', path: 'items[0].customer.name' })))).toEqual(
        [],
      );
    });

    it('follows $refs and nullable types', () => {
      expect(problemsOf(documentWith(stat({ $query: 'revenue', path: 'days[3].amount' })))).toEqual([]);
      expect(problemsOf(documentWith(stat({ $query: 'revenue', path: 'total' })))).toEqual([]);
      expectOneProblem(
        documentWith(stat({ $query: 'revenue', path: 'days[0].amt' })),
        'root.children[0].props.value',
        'no "amt"',
        'amount, day',
      );
    });

    it('refuses a list position into a field that is not a list', () => {
      expectOneProblem(
        documentWith(stat({ $query: 'orders', path: 'count[0]' })),
        'root.children[0].props.value',
        'no "[0]" in "count"',
      );
    });

    it('refuses a bound value of the wrong type for the prop', () => {
      expectOneProblem(
        documentWith({ component: 'Heading', props: { text: { $query: 'orders', path: 'items' } } }),
        'root.children[0].props.text',
        'Heading.text needs string',
        'is array',
      );
      expect(
        problemsOf(
          documentWith({ component: 'Heading', props: { text: { $query: 'orders', path: 'items[0].id' } } }),
        ),
      ).toEqual([]);
    });

    it('leaves bindings into a tool without an output schema to the run check', () => {
      const document = goodDocument();
      const queries = { ...document.queries, loose: { tool: 'untyped' } };
      expect(
        problemsOf({ ...documentWith(stat({ $query: 'loose', path: 'anything[2].at.all' })), queries }),
      ).toEqual([]);
    });
  });

  describe('rows and their fields', () => {
    const table = (rows: unknown, field: string) => ({
      component: 'Table',
      props: { rows, columns: [{ field, label: 'C' }] },
    });

    it('refuses a column field the rows do not declare', () => {
      expectOneProblem(
        documentWith(table({ $query: 'orders', path: 'items' }, 'customer.phone')),
        'root.children[0].props.columns[0].field',
        'Table field "customer.phone"',
        'have no "phone"',
      );
      expect(problemsOf(documentWith(table({ $query: 'orders', path: 'items' }, 'customer.name')))).toEqual(
        [],
      );
    });

    it('checks list lines and chart axes the same way', () => {
      const list = {
        component: 'List',
        props: { items: { $query: 'orders', path: 'items' }, primary: 'id', trailing: 'sum' },
      };
      expectOneProblem(documentWith(list), 'root.children[0].props.trailing', 'List field "sum"');
      const chart = {
        component: 'BarChart',
        props: { data: { $query: 'revenue', path: 'days' }, x: 'day', y: 'amount' },
      };
      expect(problemsOf(documentWith(chart))).toEqual([]);
      const line = {
        component: 'LineChart',
        props: { data: { $query: 'revenue', path: 'days' }, x: 'day', y: ['amount', 'count'] },
      };
      expectOneProblem(documentWith(line), 'root.children[0].props.y[1]', 'LineChart field "count"');
    });

    it('refuses rows bound to something that is not a list', () => {
      expectOneProblem(
        documentWith(table({ $query: 'orders', path: 'count' }, 'id')),
        'root.children[0].props.rows',
        'Table.rows needs array',
        'is integer',
      );
    });

    it('checks literal rows: a field must be in some row', () => {
      const rows = [{ id: 'a' }, { id: 'b', note: 'n' }];
      expect(problemsOf(documentWith(table(rows, 'note')))).toEqual([]);
      expectOneProblem(
        documentWith(table(rows, 'notes')),
        'root.children[0].props.columns[0].field',
        'in none of the rows',
      );
    });
  });

  describe('state', () => {
    it('refuses a binding to undeclared state, and a state of the wrong type', () => {
      expectOneProblem(
        documentWith({ component: 'Badge', props: { text: { $state: 'filter' } } }),
        'root.children[0].props.text',
        'state "filter" is not declared',
      );
      const document = {
        ...documentWith({ component: 'Badge', props: { text: { $state: 'tab' } } }),
        state: { tab: { a: 1 } },
      };
      expectOneProblem(
        document,
        'root.children[0].props.text',
        'Badge.text needs string or number',
        'starts as object',
      );
    });
  });

  describe('button actions', () => {
    const button = (action: unknown) => ({ component: 'Button', props: { label: 'Go', action } });

    it('refuses a button calling a tool the host does not have', () => {
      expectOneProblem(
        documentWith(button({ type: 'tool', tool: 'launch' })),
        'root.children[0].props.action.tool',
        '"launch", which is not a host tool',
      );
      expect(
        problemsOf(documentWith(button({ type: 'tool', tool: 'refund_order', input: { id: 'o_1' } }))),
      ).toEqual([]);
    });

    it('checks bindings in the tool input like any other', () => {
      const action = {
        type: 'tool',
        tool: 'refund_order',
        input: { id: { $query: 'orders', path: 'items[0].uuid' } },
      };
      expectOneProblem(documentWith(button(action)), 'root.children[0].props.action.input.id', 'no "uuid"');
      const malformed = { type: 'tool', tool: 'refund_order', input: { id: { $query: 'orders', path: 3 } } };
      expectOneProblem(
        documentWith(button(malformed)),
        'root.children[0].props.action.input.id',
        'a binding is',
        'path',
      );
    });

    it('refuses setting state that is not declared', () => {
      expectOneProblem(
        documentWith(button({ type: 'setState', key: 'mode', value: 1 })),
        'root.children[0].props.action.key',
        'state "mode", which is not declared',
      );
    });

    it('refuses an action of no known type', () => {
      expectOneProblem(
        documentWith(button({ type: 'navigate', to: '/' })),
        'root.children[0].props.action.type',
        'Button:',
        'an action is',
      );
    });
  });
});
