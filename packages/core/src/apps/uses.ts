/**
 * Every place a document reads data: props bound whole to a query or state, the bound fields of
 * a button's tool input, and the row fields of lists, tables and charts. The validator checks
 * these against the tools' output schemas; the run check against one real result per query.
 */
import {
  type AppDocument,
  type AppNode,
  type Binding,
  binding as bindingSchema,
  looksLikeBinding,
} from './document.js';
import { type KitComponent, kitComponent } from './kit.js';
import { under } from './problems.js';
import { eachNode } from './walk.js';

export interface BindingUse {
  /** Where the binding is written. */
  at: string;
  binding: Binding;
  component: KitComponent;
  /** The prop it fills, or null for a field of a button's tool input. */
  prop: string | null;
}

export interface RowFieldUse {
  /** Where the field path is written (`root.props.columns[0].field`). */
  at: string;
  field: string;
  component: KitComponent;
  /** Where the rows prop is written, and its value: a binding, or literal rows. */
  rowsAt: string;
  rows: unknown;
}

export interface Uses {
  bindings: BindingUse[];
  rowFields: RowFieldUse[];
}

/**
 * The uses of `document`. Row fields are read only from nodes `propsOk` accepts (their props
 * passed the component's schema), since they are read out of those props.
 */
export function usesOf(document: AppDocument, propsOk: (node: AppNode) => boolean = () => true): Uses {
  const uses: Uses = { bindings: [], rowFields: [] };
  eachNode(document.root, (node, at) => {
    const component = kitComponent(node.component);
    if (!component) return;
    const props = (node.props ?? {}) as Record<string, unknown>;
    for (const [prop, value] of Object.entries(props)) {
      if (component.literalOnly?.includes(prop)) continue; // refused as bound; nothing to read
      const parsed = looksLikeBinding(value) ? bindingSchema.safeParse(value) : undefined;
      if (parsed?.success)
        uses.bindings.push({ at: under(at, 'props', prop), binding: parsed.data, component, prop });
    }
    if (!propsOk(node)) return;
    const input = actionInputOf(props);
    for (const [field, value] of Object.entries(input)) {
      const parsed = looksLikeBinding(value) ? bindingSchema.safeParse(value) : undefined;
      if (parsed?.success) {
        uses.bindings.push({
          at: under(at, 'props', 'action', 'input', field),
          binding: parsed.data,
          component,
          prop: null,
        });
      }
    }
    if (component.rowFields) {
      const rowsAt = under(at, 'props', component.rowFields.rows);
      for (const { at: fieldAt, field } of component.rowFields.fields(props)) {
        uses.rowFields.push({
          at: under(at, 'props', fieldAt),
          field,
          component,
          rowsAt,
          rows: props[component.rowFields.rows],
        });
      }
    }
  });
  return uses;
}

/** The host tools a document calls: its queries' tools and its buttons' tools, each once. */
export function toolsOf(document: AppDocument): Set<string> {
  const tools = new Set(Object.values(document.queries ?? {}).map((query) => query.tool));
  eachNode(document.root, (node) => {
    const action = (node.props as { action?: { type?: unknown; tool?: unknown } } | undefined)?.action;
    if (action?.type === 'tool' && typeof action.tool === 'string') tools.add(action.tool);
  });
  return tools;
}

/** A button's tool input, or an empty object for any other node or action. */
export function actionInputOf(props: Record<string, unknown>): Record<string, unknown> {
  const action = props.action as { type?: unknown; input?: unknown } | undefined;
  if (action?.type !== 'tool' || !action.input || typeof action.input !== 'object') return {};
  return action.input as Record<string, unknown>;
}
