/** A host catalog and documents shared by the apps tests. */
import type { AppDocument } from '../../src/apps/document.js';
import { type AppToolCatalog, validateDocument } from '../../src/apps/validate.js';

const order = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    total_cents: { type: 'integer' },
    status: { type: 'string', enum: ['open', 'paid'] },
    customer: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
  required: ['id', 'total_cents', 'status'],
} as const;

export const TOOLS: AppToolCatalog = {
  list_orders: {
    read: true,
    output: {
      type: 'object',
      properties: { items: { type: 'array', items: order }, count: { type: 'integer' } },
    },
  },
  // The same data described through $defs and a $ref, with a nullable total.
  revenue: {
    read: true,
    output: {
      $defs: { day: { type: 'object', properties: { day: { type: 'string' }, amount: { type: 'number' } } } },
      type: 'object',
      properties: {
        total: { type: ['number', 'null'] },
        days: { type: 'array', items: { $ref: '#/$defs/day' } },
      },
    },
  },
  untyped: { read: true },
  refund_order: { read: false, output: { type: 'object', properties: { ok: { type: 'boolean' } } } },
};

/** A document that passes every rule, to be spoiled one way per test. */
export function goodDocument() {
  return {
    version: 1,
    title: 'Orders',
    queries: { orders: { tool: 'list_orders', input: { status: 'open' } }, revenue: { tool: 'revenue' } },
    state: { tab: 'open' },
    root: {
      component: 'Stack',
      props: { gap: 12 },
      children: [
        { component: 'Heading', props: { text: 'Open orders' } },
        { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
        {
          component: 'Money',
          props: {
            amount: { $query: 'orders', path: 'items[0].total_cents' },
            currency: 'USD',
            unit: 'minor',
          },
        },
        {
          component: 'Table',
          props: {
            rows: { $query: 'orders', path: 'items' },
            columns: [
              { field: 'id', label: 'Order' },
              { field: 'customer.name', label: 'Customer' },
              { field: 'total_cents', label: 'Total', format: 'money', currency: 'USD' },
            ],
          },
        },
        {
          component: 'LineChart',
          props: { data: { $query: 'revenue', path: 'days' }, x: 'day', y: ['amount'] },
        },
        {
          component: 'Button',
          props: {
            label: 'Refund first',
            action: {
              type: 'tool',
              tool: 'refund_order',
              input: { id: { $query: 'orders', path: 'items[0].id' }, reason: 'asked' },
            },
          },
        },
        {
          component: 'Button',
          props: { label: 'Paid', action: { type: 'setState', key: 'tab', value: 'paid' } },
        },
        { component: 'Badge', props: { text: { $state: 'tab' } } },
      ],
    },
  };
}

/** A result per query of `goodDocument`, as the tools would return them. */
export function goodResults(): Record<string, unknown> {
  return {
    orders: {
      count: 1,
      items: [{ id: 'o_1', total_cents: 1250, status: 'open', customer: { name: 'Ada' } }],
    },
    revenue: { total: 12.5, days: [{ day: '2026-11-01', amount: 12.5 }] },
  };
}

/** `goodDocument` with the root's children replaced by `nodes`. */
export function documentWith(...nodes: unknown[]) {
  const document = goodDocument();
  return { ...document, root: { ...document.root, children: nodes } };
}

/** `goodDocument` as the validator hands it back. */
export function validGoodDocument(): AppDocument {
  const result = validateDocument(goodDocument(), { tools: TOOLS });
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.document;
}
