/**
 * A document the model is still writing, made safe to paint: what `parsePartialJson` recovered
 * from the cut-off input, reduced to a tree any Kit renderer can walk. Nodes whose component is not
 * (yet) a Kit name are dropped with their subtree, props that are not an object read as none,
 * children only stay where the component takes them, and the walk keeps to the document caps. The
 * queries are left out: a preview is never run, its bindings read as nothing.
 */
import { APP_DOCUMENT_VERSION, type AppDocument, type AppNode } from './document.js';
import { kitComponent } from './kit.js';
import { APP_DOCUMENT_LIMITS } from './limits.js';

/** The paintable part of a partial document, or null while it has no root worth showing. */
export function partialDocument(value: unknown): AppDocument | null {
  if (!isRecord(value)) return null;
  const budget = { nodes: APP_DOCUMENT_LIMITS.maxNodes };
  const root = partialNode(value.root, 1, budget);
  if (!root) return null;
  return {
    version: APP_DOCUMENT_VERSION,
    title: typeof value.title === 'string' ? value.title : '',
    ...(isRecord(value.state) ? { state: value.state as AppDocument['state'] } : {}),
    root,
  } as AppDocument;
}

function partialNode(value: unknown, depth: number, budget: { nodes: number }): AppNode | null {
  if (!isRecord(value) || typeof value.component !== 'string') return null;
  if (depth > APP_DOCUMENT_LIMITS.maxDepth || budget.nodes <= 0) return null;
  const kit = kitComponent(value.component);
  if (!kit) return null;
  budget.nodes -= 1;
  const node: Record<string, unknown> = { component: kit.name };
  if (isRecord(value.props)) node.props = value.props;
  if (kit.children && Array.isArray(value.children)) {
    node.children = value.children.flatMap((child) => partialNode(child, depth + 1, budget) ?? []);
  }
  return node as unknown as AppNode;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
