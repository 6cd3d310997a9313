/**
 * `<AppView>`: renders an app document with the Kit. Props are resolved from the query results
 * the host passes in and from the app's local state, which buttons change. A node whose component
 * the Kit does not know renders nothing; the walk stops at the document caps (depth and node
 * count), so even a document that was never validated renders in bounded work and never throws.
 */
import { APP_DOCUMENT_LIMITS } from '@service/core/apps';
import { type ReactNode, useCallback, useMemo, useState } from 'react';
import type { AppAction } from './actions.js';
import { isRecord, resolveProps } from './bindings.js';
import type { AppDocument } from './document.js';
import { usableLocale } from './format.js';
import { KIT_VIEWS, type KitContext } from './kit.js';

export interface AppViewProps {
  /** The app document (as the wire answers it for `POST /apps/:id/open`, `document`). */
  document: AppDocument;
  /** Each query's result by name, for `{ $query, path }` bindings; a missing one reads as nothing. */
  queries?: Readonly<Record<string, unknown>>;
  /** Initial local state, over the document's own initial values. */
  state?: Readonly<Record<string, unknown>>;
  /** Called for each action a button runs; a tool action carries its input resolved. */
  onAction?: (action: AppAction) => void | Promise<void>;
  /**
   * The locale numbers, money and dates are written in (a BCP 47 tag such as `de-CH`); the
   * reader's by default, and for a value Intl does not take.
   */
  locale?: string;
}

const NO_QUERIES: Readonly<Record<string, unknown>> = {};

export function AppView({ document, queries = NO_QUERIES, state, onAction, locale }: AppViewProps) {
  const [local, setLocal] = useState<Record<string, unknown>>(() => ({
    ...(isRecord(document?.state) ? document.state : {}),
    ...(state ?? {}),
  }));
  const setState = useCallback(
    (key: string, value: unknown) => setLocal((current) => ({ ...current, [key]: value })),
    [],
  );
  const kit = useMemo<KitContext>(
    () => ({ scope: { queries, state: local }, locale: usableLocale(locale), setState, onAction }),
    [queries, local, locale, setState, onAction],
  );
  const title = typeof document?.title === 'string' ? document.title : undefined;
  const budget = { nodes: APP_DOCUMENT_LIMITS.maxNodes };
  return (
    <section className="svc-app" aria-label={title}>
      {renderNode(document?.root, kit, 1, budget)}
    </section>
  );
}

function renderNode(
  node: unknown,
  kit: KitContext,
  depth: number,
  budget: { nodes: number },
  key?: number,
): ReactNode {
  if (!isRecord(node) || typeof node.component !== 'string') return null;
  if (depth > APP_DOCUMENT_LIMITS.maxDepth || budget.nodes <= 0) return null;
  const entry = KIT_VIEWS.get(node.component);
  if (!entry) return null;
  budget.nodes -= 1;
  const View = entry.view;
  const children =
    entry.children && Array.isArray(node.children)
      ? node.children.map((child, i) => renderNode(child, kit, depth + 1, budget, i))
      : undefined;
  return (
    <View key={key} props={resolveProps(node.props, kit.scope)} kit={kit}>
      {children}
    </View>
  );
}
