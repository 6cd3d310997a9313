/**
 * `partialDocument`: what a preview paints of a document the model is still writing, recovered by
 * the AI SDK's `parsePartialJson` from every cut of a real document's text.
 */
import { parsePartialJson } from 'ai';
import { describe, expect, it } from 'vitest';
import { APP_DOCUMENT_LIMITS, KIT_NAMES, partialDocument } from '../../src/apps/index.js';

const document = {
  version: 1,
  title: 'Open orders',
  queries: { orders: { tool: 'list_orders' } },
  state: { tab: 'open' },
  root: {
    component: 'Stack',
    children: [
      { component: 'Heading', props: { text: 'Orders' } },
      {
        component: 'Table',
        props: { rows: { $query: 'orders', path: 'items' }, columns: [{ field: 'id', label: 'Order' }] },
      },
      { component: 'Row', children: [{ component: 'Badge', props: { text: 'New' } }] },
    ],
  },
};

/** Every node's component name in the tree, depth first. */
function names(node: unknown): string[] {
  if (!node || typeof node !== 'object') return [];
  const { component, children } = node as { component?: unknown; children?: unknown };
  return [String(component), ...(Array.isArray(children) ? children.flatMap(names) : [])];
}

describe('partialDocument', () => {
  it('reduces every cut of a document to Kit nodes, growing to the whole tree, never its queries', async () => {
    const text = JSON.stringify(document);
    let last = 0;
    for (let end = 1; end <= text.length; end++) {
      const { value } = await parsePartialJson(text.slice(0, end));
      const partial = partialDocument(value);
      if (!partial) continue;
      const found = names(partial.root);
      for (const name of found) expect(KIT_NAMES).toContain(name);
      expect(partial).not.toHaveProperty('queries');
      expect(found.length).toBeGreaterThanOrEqual(last);
      last = found.length;
    }
    const whole = partialDocument(document)!;
    expect(names(whole.root)).toEqual(['Stack', 'Heading', 'Table', 'Row', 'Badge']);
    expect(whole).toEqual({ version: 1, title: 'Open orders', state: { tab: 'open' }, root: document.root });
  });

  it('answers null without a root, and drops what no renderer can walk', () => {
    expect(partialDocument(undefined)).toBeNull();
    expect(partialDocument({ title: 'x' })).toBeNull();
    expect(partialDocument({ root: { component: 'Sta' } })).toBeNull();
    const odd = partialDocument({
      title: 7,
      root: {
        component: 'Stack',
        props: 'wide',
        children: [
          null,
          'Text',
          { component: 'Text', props: { text: 'ok' }, children: [{ component: 'Badge' }] },
        ],
      },
    });
    expect(odd).toEqual({
      version: 1,
      title: '',
      root: { component: 'Stack', children: [{ component: 'Text', props: { text: 'ok' } }] },
    });
  });

  it('keeps to the document caps however deep or wide the input goes', () => {
    let deep: Record<string, unknown> = { component: 'Text', props: { text: 'bottom' } };
    for (let i = 0; i < 40; i++) deep = { component: 'Stack', children: [deep] };
    expect(names(partialDocument({ root: deep })!.root)).toHaveLength(APP_DOCUMENT_LIMITS.maxDepth);
    const wide = {
      component: 'Stack',
      children: Array.from({ length: 1000 }, () => ({ component: 'Badge' })),
    };
    expect(names(partialDocument({ root: wide })!.root)).toHaveLength(APP_DOCUMENT_LIMITS.maxNodes);
  });
});
