/**
 * The demo model's apps script: a small matcher that answers a few requests about screens with
 * the service's apps tools, offline and always the same way.
 *
 * - "make a screen of my orders" / "show my orders as an app" → `service_make` with a document
 *   that queries `list_orders` and shows a stat of the count and a table of the orders (placed in
 *   `orders.side` when the same message says "pin it to orders.side" or "on my orders page");
 * - "pin it to orders.side" / "put it on my orders page" → `service_apps_pin` of the app it made;
 * - "add a chart to it" → `service_make` with that app's `appId` and a bar chart of the orders by
 *   status (an `order_stats` query) below the table;
 * - "add <words> to it" / "add <words>" / "edit it to show <words>" → `service_make` with that
 *   app's `appId` and the table grown by a column: `notes`, `items` and `status` are fields
 *   `list_orders` returns; any other words become a field it does not return (`the customer's
 *   shoe size` → `customer_shoe_size`), so the build is refused and nothing changes;
 * - a rebase replay (a call whose only tool is `apply_wish`) → the same edits, applied to the
 *   document in the prompt; a wish it does not know gets no tool call.
 *
 * The app it means is the last one a `service_make` of this conversation built; with none in the
 * prompt it asks `service_apps_list` first and then acts on the app changed last (listed first),
 * opening it first (`service_apps_open`) to edit its own document: a remix of a host component
 * is edited from the component's document, not from a screen of the orders.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';

export type ScriptedReply = { text: string } | { tool: string; input: Record<string, unknown> };

/** The slot of the demo host's orders page. */
const ORDERS_SLOT = 'orders.side';
/** The title of the screen it builds. */
export const ORDERS_SCREEN_TITLE = 'My orders';

type Json = Record<string, unknown>;

/** The screen "make a screen of my orders" builds. */
export function ordersScreen(): Json {
  return {
    version: 1,
    title: ORDERS_SCREEN_TITLE,
    queries: { orders: { tool: 'list_orders' } },
    root: {
      component: 'Stack',
      props: { gap: 12 },
      children: [
        { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
        {
          component: 'Table',
          props: {
            rows: { $query: 'orders', path: 'orders' },
            columns: [
              { field: 'id', label: 'Order' },
              { field: 'status', label: 'Status', format: 'badge' },
            ],
          },
        },
      ],
    },
  };
}

/** Words naming the fields `list_orders` returns; any other words name a field it does not. */
const KNOWN_FIELDS: Array<[RegExp, { field: string; label: string }]> = [
  [/^(notes?)$/, { field: 'note', label: 'Note' }],
  [/^(items?|item names?|names?|products?)$/, { field: 'item', label: 'Item' }],
  [/^(status|statuses)$/, { field: 'status', label: 'Status' }],
];

/** The column a wish's words ask for: "the customer's shoe size" → `customer_shoe_size`. */
export function columnFor(words: string): { field: string; label: string } | null {
  const plain = words
    .toLowerCase()
    .replace(/[.!?]+$/, '')
    .replace(/^(a|an|the|my|their)\s+/, '')
    .replace(/\s+column$/, '')
    .trim();
  if (!plain) return null;
  for (const [pattern, column] of KNOWN_FIELDS) if (pattern.test(plain)) return column;
  const field = plain
    .replace(/['’]s\b/g, '')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!field) return null;
  return { field, label: plain.charAt(0).toUpperCase() + plain.slice(1) };
}

/** An edit the model knows: a table column, or a chart of the orders by status. */
export type Edit = { field: string; label: string } | { chart: 'byStatus' };

/** `document` with the edit made (a copy). */
export function applyEdit(document: Json, edit: Edit): Json {
  return 'chart' in edit ? withStatusChart(document) : withColumn(document, edit);
}

/**
 * `document` with a bar chart of the orders by status below its tree (an `order_stats` query
 * named `stats`); the same document when it has one already.
 */
export function withStatusChart(document: Json): Json {
  const copy = structuredClone(document) as Json & { queries?: Json; root: Json & { children?: unknown[] } };
  if (copy.queries && 'stats' in copy.queries) return copy;
  copy.queries = { ...(copy.queries ?? {}), stats: { tool: 'order_stats' } };
  const chart = {
    component: 'BarChart',
    props: {
      data: { $query: 'stats', path: 'byStatus' },
      x: 'status',
      y: 'count',
      label: 'Orders by status',
    },
  };
  if (Array.isArray(copy.root.children)) copy.root.children.push(chart);
  else copy.root = { component: 'Stack', props: { gap: 12 }, children: [copy.root, chart] };
  return copy;
}

/** The edit a wish asks for, or null when the words are not an edit it knows. */
export function editOf(wish: string): Edit | null {
  const add = /\badd\s+(.+?)\s+to\s+(?:it|this|that|the\s+(?:screen|app))\b/i.exec(wish);
  const edit = /\bedit\s+it\s+to\s+(?:show|add|include)\s+(.+)$/i.exec(wish);
  // "add the customer's shoe size": the app is implied, unless the words are about an order.
  const bare = /^\s*(?:and\s+)?(?:now\s+)?add\s+(.+)$/i.exec(wish);
  const words = add?.[1] ?? edit?.[1] ?? (bare && !/\border\b/i.test(bare[1]!) ? bare[1] : undefined);
  if (!words) return null;
  if (/^(an?\s+|the\s+)?(bar\s+)?(chart|graph)\b/i.test(words.trim())) return { chart: 'byStatus' };
  return columnFor(words);
}

/** `document` with the column added to its table (a copy; the same document when it has one already). */
export function withColumn(document: Json, column: { field: string; label: string }): Json {
  const copy = structuredClone(document);
  const visit = (node: unknown): boolean => {
    if (!node || typeof node !== 'object') return false;
    const n = node as { component?: string; props?: { columns?: unknown }; children?: unknown[] };
    if (n.component === 'Table' && Array.isArray(n.props?.columns)) {
      const columns = n.props.columns as Array<{ field: string }>;
      if (!columns.some((c) => c.field === column.field)) columns.push({ ...column });
      return true;
    }
    return (n.children ?? []).some(visit);
  };
  visit(copy.root);
  return copy;
}

const MAKE =
  /\b(make|build|create)\b.*\b(screen|app|dashboard)\b.*\borders?\b|\borders?\b.*\bas\s+an?\s+(screen|app)\b/i;
const PIN = /\bpin\s+(it|this|that)\b|\bput\s+it\s+on\s+my\s+orders\s+page\b|\bon\s+my\s+orders\s+page\b/i;

/**
 * The scripted answer to `options`, or null when it is not about apps (the caller's own matcher
 * answers then).
 */
export function appsReply(options: LanguageModelV3CallOptions): ScriptedReply | null {
  const tools = (options.tools ?? []).map((tool) => tool.name);
  if (tools.length === 1 && tools[0] === 'apply_wish') return replayReply(options.prompt);

  const prompt = options.prompt;
  const last = prompt.at(-1);
  const said = lastUserText(prompt);
  if (last?.role === 'tool') {
    const result = last.content.find((part) => part.type === 'tool-result');
    if (result?.type !== 'tool-result') return null;
    const value = outputValue(result.output);
    if (result.toolName === 'service_apps_list') {
      // Asked for the app before acting on it: act now on the one changed last (listed first).
      const apps = (value as { apps?: Array<{ id: string }> } | null)?.apps ?? [];
      const appId = apps[0]?.id;
      if (!appId) return { text: 'You have no apps yet: ask me to make a screen of your orders.' };
      // An edit starts from the app's own document, which the list does not carry: open it first.
      if (editOf(said)) return { tool: 'service_apps_open', input: { appId } };
      return actOn(said, appId, null);
    }
    if (result.toolName === 'service_apps_open') {
      const opened = value as { id?: string; document?: Json } | null;
      if (!opened?.id || !opened.document) return null;
      return actOn(said, opened.id, opened.document);
    }
    if (result.toolName === 'service_make') {
      const receipt = value as { status?: string; note?: string } | null;
      if (receipt?.status === 'failed') return { text: `I could not change the screen: ${receipt.note}` };
      return { text: `Done: ${receipt?.note ?? 'the screen is saved'}.` };
    }
    if (result.toolName === 'service_apps_pin') {
      const placed = value as { where?: string } | null;
      return { text: `Done: it shows ${placed?.where ?? 'on your page'}.` };
    }
    return null;
  }
  if (last?.role !== 'user') return null;
  if (MAKE.test(said)) {
    return {
      tool: 'service_make',
      input: {
        wish: wishOf(said),
        document: ordersScreen(),
        ...(PIN.test(said) || /orders\.side/.test(said) ? { slot: ORDERS_SLOT } : {}),
      },
    };
  }
  if (!PIN.test(said) && !editOf(said)) return null;
  const made = lastBuilt(prompt);
  if (!made) return { tool: 'service_apps_list', input: {} };
  return actOn(said, made.appId, made.document);
}

/** Pins or edits `appId` as `said` asks; `document` is its current one when the prompt has it. */
function actOn(said: string, appId: string, document: Json | null): ScriptedReply | null {
  const edit = editOf(said);
  if (edit) {
    return {
      tool: 'service_make',
      input: { wish: wishOf(said), appId, document: applyEdit(document ?? ordersScreen(), edit) },
    };
  }
  if (PIN.test(said)) return { tool: 'service_apps_pin', input: { appId, slot: ORDERS_SLOT } };
  return null;
}

/**
 * A rebase replay: the wish in the prompt applied to the document in the prompt, or no tool call.
 * The service's replayer asks in the user message ("The app document now: {…} … The person's
 * wish: …"); its system message lists the Kit, so the wish and the document are read from the
 * user message first.
 */
function replayReply(prompt: LanguageModelV3Prompt): ScriptedReply {
  const asked = lastUserText(prompt);
  const wish = /wish:\s*([\s\S]+)$/i.exec(asked)?.[1]?.trim() ?? asked;
  const document = jsonObjects(asked).find((value) => 'root' in value && 'version' in value);
  const edit = editOf(wish);
  if (!edit || !document) return { text: 'I do not know how to apply that wish to this screen.' };
  return { tool: 'apply_wish', input: { document: applyEdit(document, edit) } };
}

/** The app the last successful `service_make` of the prompt built or edited, with its document. */
function lastBuilt(prompt: LanguageModelV3Prompt): { appId: string; document: Json } | null {
  const calls = new Map<string, Json>();
  let found: { appId: string; document: Json } | null = null;
  for (const message of prompt) {
    if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'tool-call' && part.toolName === 'service_make') {
          const input = (typeof part.input === 'string' ? JSON.parse(part.input) : part.input) as Json;
          if (input && typeof input.document === 'object') calls.set(part.toolCallId, input.document as Json);
        }
      }
    }
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result' || part.toolName !== 'service_make') continue;
        const receipt = outputValue(part.output) as { status?: string; note?: string } | null;
        const appId = /\b(app_[A-Za-z0-9_-]+)/.exec(receipt?.note ?? '')?.[1];
        const document = calls.get(part.toolCallId);
        if (receipt?.status !== 'failed' && appId && document) found = { appId, document };
      }
    }
  }
  return found;
}

function lastUserText(prompt: LanguageModelV3Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role === 'user')
      return message.content.map((part) => (part.type === 'text' ? part.text : '')).join(' ');
  }
  return '';
}

function outputValue(output: unknown): unknown {
  const o = output as { type?: string; value?: unknown };
  if (o && typeof o === 'object' && 'value' in o) {
    if (o.type === 'text' && typeof o.value === 'string') {
      try {
        return JSON.parse(o.value);
      } catch {
        return o.value;
      }
    }
    return o.value;
  }
  return output;
}

function wishOf(said: string): string {
  return said.trim().slice(0, 2000) || 'a screen of my orders';
}

/** Every top-level JSON object written in `text` (balanced braces outside strings). */
function jsonObjects(text: string): Json[] {
  const found: Json[] = [];
  let start = -1;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"' && depth > 0) inString = true;
    else if (ch === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (ch === '}' && depth > 0) {
      depth--;
      if (depth === 0) {
        try {
          const value = JSON.parse(text.slice(start, i + 1)) as unknown;
          if (value && typeof value === 'object' && !Array.isArray(value)) found.push(value as Json);
        } catch {
          // Braces that are not JSON: not a document.
        }
      }
    }
  }
  return found;
}
