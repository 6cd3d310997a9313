/**
 * The Kit as data: every component listed with its props as JSON Schema, and each component's
 * schema accepting a sound node and refusing a broken one through the validator.
 */
import { describe, expect, it } from 'vitest';
import { KIT_NAMES, kitCatalog, type Problem, validateDocument } from '../../src/apps/index.js';
import { documentWith, TOOLS } from './fixtures.js';

const problemsOf = (node: unknown): Problem[] => {
  const result = validateDocument(documentWith(node), { tools: TOOLS });
  return result.ok ? [] : result.problems;
};

const rows = { $query: 'orders', path: 'items' };

/** For each component: a node it accepts and one it refuses, with the refused prop. */
const CASES: Record<string, { good: unknown; bad: unknown; badAt: string }> = {
  Stack: {
    good: { component: 'Stack', props: { gap: 8 } },
    bad: { component: 'Stack', props: { gap: -1 } },
    badAt: 'gap',
  },
  Row: {
    good: { component: 'Row', props: { justify: 'between' } },
    bad: { component: 'Row', props: { justify: 'around' } },
    badAt: 'justify',
  },
  Card: {
    good: { component: 'Card', props: { title: 'T' } },
    bad: { component: 'Card', props: { title: 1 } },
    badAt: 'title',
  },
  Heading: {
    good: { component: 'Heading', props: { text: 'H', level: 3 } },
    bad: { component: 'Heading', props: { text: 'H', level: 4 } },
    badAt: 'level',
  },
  Text: {
    good: { component: 'Text', props: { text: 3, tone: 'muted' } },
    bad: { component: 'Text', props: { text: true } },
    badAt: 'text',
  },
  Stat: {
    good: { component: 'Stat', props: { label: 'L', value: '12%', delta: -2 } },
    bad: { component: 'Stat', props: { label: 'L', value: 1, delta: '+2' } },
    badAt: 'delta',
  },
  Money: {
    good: { component: 'Money', props: { amount: 1250, currency: 'USD', unit: 'minor' } },
    bad: { component: 'Money', props: { amount: 1, currency: 'USD', unit: 'cents' } },
    badAt: 'unit',
  },
  Badge: {
    good: { component: 'Badge', props: { text: 'paid', tone: 'success' } },
    bad: { component: 'Badge', props: { text: 'paid', tone: 'red' } },
    badAt: 'tone',
  },
  Button: {
    good: {
      component: 'Button',
      props: { label: 'Refund', action: { type: 'tool', tool: 'refund_order' }, confirm: 'Sure?' },
    },
    bad: { component: 'Button', props: { action: { type: 'tool', tool: 'refund_order' } } },
    badAt: 'label',
  },
  List: {
    good: { component: 'List', props: { items: rows, primary: 'id', secondary: 'status' } },
    bad: { component: 'List', props: { items: rows } },
    badAt: 'primary',
  },
  Table: {
    good: { component: 'Table', props: { rows, columns: [{ field: 'id', label: 'Id' }], limit: 5 } },
    bad: { component: 'Table', props: { rows, columns: [] } },
    badAt: 'columns',
  },
  BarChart: {
    good: { component: 'BarChart', props: { data: rows, x: 'id', y: 'total_cents' } },
    bad: { component: 'BarChart', props: { data: rows, x: 'id', y: ['total_cents'] } },
    badAt: 'y',
  },
  LineChart: {
    good: { component: 'LineChart', props: { data: rows, x: 'id', y: 'total_cents' } },
    bad: { component: 'LineChart', props: { data: rows, x: 'id', y: 'a..b' } },
    badAt: 'y',
  },
};

describe('the Kit', () => {
  it('lists about a dozen components, each with its props as JSON Schema', () => {
    const catalog = kitCatalog();
    expect(catalog.map((entry) => entry.name)).toEqual(KIT_NAMES);
    expect(Object.keys(CASES).sort()).toEqual([...KIT_NAMES].sort());
    for (const entry of catalog) {
      expect(entry.summary.length).toBeGreaterThan(10);
      expect(entry.props).toMatchObject({ type: 'object', additionalProperties: false });
      expect(entry.props).not.toHaveProperty('$schema');
    }
    const money = catalog.find((entry) => entry.name === 'Money')!;
    expect(money.props).toMatchObject({
      required: ['amount', 'currency'],
      properties: { unit: { enum: ['major', 'minor', 'micros'] } },
    });
    expect(catalog.filter((entry) => entry.children).map((entry) => entry.name)).toEqual([
      'Stack',
      'Row',
      'Card',
    ]);
  });

  it('is plain data the agent can be sent', () => {
    expect(JSON.parse(JSON.stringify(kitCatalog()))).toEqual(kitCatalog());
  });

  describe.each(Object.entries(CASES))('%s', (name, { good, bad, badAt }) => {
    it('accepts a sound node', () => {
      expect(problemsOf(good)).toEqual([]);
    });

    it(`refuses a bad ${badAt}`, () => {
      const problems = problemsOf(bad);
      expect(problems).toHaveLength(1);
      expect(problems[0]!.path).toMatch(new RegExp(`^root\\.children\\[0\\]\\.props\\.${badAt}`));
      expect(problems[0]!.message).toMatch(new RegExp(`^${name}: `));
    });
  });
});
