/**
 * The app document as this package reads it: the shape of core's `AppDocument` written as plain
 * types, so a page's bundle needs no schema library for them. A document core checked is one of
 * these; the renderer still reads every field defensively, as data from the network.
 */
export interface AppNode {
  component: string;
  props?: Record<string, unknown>;
  children?: AppNode[];
}

export interface AppDocument {
  version: number;
  title: string;
  root: AppNode;
  queries?: Record<string, { tool: string; input?: Record<string, unknown> }>;
  state?: Record<string, unknown>;
}
