/** Visiting every node of an app's tree with its path. */
import type { AppNode } from './document.js';
import { under } from './problems.js';

/** Calls `visit` for each node, parents first; the tree's depth is capped before this runs. */
export function eachNode(root: AppNode, visit: (node: AppNode, at: string) => void, at = 'root'): void {
  visit(root, at);
  for (const [i, child] of (root.children ?? []).entries()) eachNode(child, visit, under(at, 'children', i));
}
