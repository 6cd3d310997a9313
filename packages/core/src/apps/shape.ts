/**
 * The cheap first look at a document: size in bytes, JSON nesting, and the tree's node count and
 * depth, each walk stopping at its cap. It runs before any schema, so a hostile document (a huge
 * tree, a deep nesting) is refused after a bounded amount of work.
 */
import { APP_DOCUMENT_LIMITS } from './limits.js';

export interface ShapeProblem {
  path: string;
  message: string;
}

/** The first cap `raw` passes, or null when it is within all of them. */
export function shapeProblem(raw: unknown, limits = APP_DOCUMENT_LIMITS): ShapeProblem | null {
  const nesting = jsonNestingPast(raw, limits.maxJsonDepth);
  if (nesting) return { path: '', message: `the document nests deeper than ${limits.maxJsonDepth} levels` };

  let text: string | undefined;
  try {
    text = JSON.stringify(raw);
  } catch {
    return { path: '', message: 'the document is not JSON' };
  }
  if (text === undefined) return { path: '', message: 'the document is not JSON' };
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > limits.maxBytes) {
    return { path: '', message: `the document is ${bytes} bytes; at most ${limits.maxBytes} are allowed` };
  }

  const root = raw !== null && typeof raw === 'object' ? (raw as { root?: unknown }).root : undefined;
  return treeProblem(root, limits);
}

/** True when `value` nests objects or arrays deeper than `max` (walked without recursion). */
function jsonNestingPast(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

function treeProblem(root: unknown, limits: typeof APP_DOCUMENT_LIMITS): ShapeProblem | null {
  let nodes = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    nodes += 1;
    if (nodes > limits.maxNodes)
      return { path: 'root', message: `the tree has more than ${limits.maxNodes} nodes` };
    if (depth > limits.maxDepth) {
      return { path: 'root', message: `the tree is deeper than ${limits.maxDepth} levels` };
    }
    const children = (node as { children?: unknown }).children;
    if (Array.isArray(children)) for (const child of children) stack.push([child, depth + 1]);
  }
  return null;
}
