/**
 * The demo model's scripted apps answers, read off its stream as the agent would: what it calls
 * for each request about a screen, that the documents it writes pass (or, for a field the host
 * does not return, fail) the real document checks against `list_orders`' declared output, and
 * what it says after each receipt; and how it writes a call of the apps building tools, in
 * chunks as a provider streams it, with the other tools called whole.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { validateDocument } from '@service/core/apps';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDemoModel, INPUT_CHUNK_CHARS, INPUT_CHUNK_DELAY_MS } from '../src/demo-model.js';
import { ordersScreen } from '../src/demo-model-apps.js';
import { hostTools } from '../src/tools.js';

type Answer = { text: string } | { tool: string; input: Record<string, unknown> };

/** Every part of the model's stream for `prompt`, read to its end. */
async function partsOf(prompt: LanguageModelV3Prompt, extra: Partial<LanguageModelV3CallOptions> = {}) {
  const { stream } = await createDemoModel().doStream({ prompt, ...extra });
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const part of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) parts.push(part);
  return parts;
}

async function ask(prompt: LanguageModelV3Prompt, extra: Partial<LanguageModelV3CallOptions> = {}) {
  const parts = await partsOf(prompt, extra);
  const call = parts.find((p) => p.type === 'tool-call');
  if (call?.type === 'tool-call') return { tool: call.toolName, input: JSON.parse(call.input) } as Answer;
  return {
    text: parts.map((p) => (p.type === 'text-delta' ? p.delta : '')).join(''),
  } as Answer;
}

const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
const called = (id: string, toolName: string, input: unknown) => ({
  role: 'assistant' as const,
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName, input }],
});
const answered = (id: string, toolName: string, value: unknown) => ({
  role: 'tool' as const,
  content: [
    {
      type: 'tool-result' as const,
      toolCallId: id,
      toolName,
      output: { type: 'json' as const, value: value as never },
    },
  ],
});

/** The document a tool call sends. */
function documentOf(answer: Answer): unknown {
  return 'input' in answer ? answer.input.document : undefined;
}

/** The checks `service_make` makes, against the host's real `list_orders` declaration. */
function check(document: unknown) {
  const outputOf = (name: string) =>
    z.toJSONSchema(hostTools.find((t) => t.name === name)!.output as z.ZodType, { io: 'output' }) as never;
  return validateDocument(document, {
    tools: {
      list_orders: { read: true, output: outputOf('list_orders') },
      order_stats: { read: true, output: outputOf('order_stats') },
    },
  });
}

/** A conversation in which the model built app_1 with its orders screen. */
const built = [
  user('make a screen of my orders'),
  called('c1', 'service_make', { wish: 'make a screen of my orders', document: ordersScreen() }),
  answered('c1', 'service_make', {
    status: 'built',
    app: 'My orders',
    where: 'your apps',
    note: 'saved as version 1 of app_1',
  }),
  { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'Done.' }] },
];

describe('the demo model builds apps', () => {
  it('makes a screen of the orders: a valid document with a stat of the count and a table, no slot', async () => {
    for (const said of ['make a screen of my orders', 'Show my orders as an app']) {
      const answer = await ask([user(said)]);
      expect(answer).toMatchObject({ tool: 'service_make', input: { wish: said } });
      const input = (answer as { input: Record<string, unknown> }).input;
      expect(input.slot).toBeUndefined();
      expect(input.appId).toBeUndefined();
      expect(check(input.document)).toMatchObject({ ok: true });
      expect(JSON.stringify(input.document)).toContain('"path":"count"');
    }
  });

  it('places a new screen in orders.side when the same message asks for it', async () => {
    const answer = await ask([user('make a screen of my orders and pin it to orders.side')]);
    expect(answer).toMatchObject({ tool: 'service_make', input: { slot: 'orders.side' } });
  });

  it('pins the app it built, found in the conversation', async () => {
    for (const said of ['pin it to orders.side', 'put it on my orders page']) {
      expect(await ask([...built, user(said)])).toEqual({
        tool: 'service_apps_pin',
        input: { appId: 'app_1', slot: 'orders.side' },
      });
    }
  });

  it('lists the apps first when the conversation does not name one, then acts on the one changed last', async () => {
    expect(await ask([user('pin it to orders.side')])).toEqual({ tool: 'service_apps_list', input: {} });
    const listed = [
      user('pin it to orders.side'),
      called('l1', 'service_apps_list', {}),
      answered('l1', 'service_apps_list', {
        apps: [
          { id: 'app_new', name: 'My orders', kind: 'app', version: 1, slots: [] },
          { id: 'app_old', name: 'Old', kind: 'app', version: 1, slots: [] },
        ],
      }),
    ];
    expect(await ask(listed)).toEqual({
      tool: 'service_apps_pin',
      input: { appId: 'app_new', slot: 'orders.side' },
    });
  });

  it('opens the app changed last before editing it, and edits its own document (a remix keeps its component)', async () => {
    const summary = {
      version: 1,
      title: 'Orders summary',
      queries: { orders: { tool: 'list_orders' } },
      root: {
        component: 'Card',
        props: { title: 'Summary' },
        children: [
          { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
        ],
      },
    };
    const listed = [
      user('add a chart to it'),
      called('l1', 'service_apps_list', {}),
      answered('l1', 'service_apps_list', {
        apps: [{ id: 'app_remix', name: 'Orders summary', kind: 'remix', version: 1, slots: [] }],
      }),
    ];
    expect(await ask(listed)).toEqual({ tool: 'service_apps_open', input: { appId: 'app_remix' } });
    const opened = [
      ...listed,
      called('o1', 'service_apps_open', { appId: 'app_remix' }),
      answered('o1', 'service_apps_open', {
        id: 'app_remix',
        name: 'Orders summary',
        version: 1,
        document: summary,
      }),
    ];
    const answer = await ask(opened);
    expect(answer).toMatchObject({
      tool: 'service_make',
      input: { appId: 'app_remix', wish: 'add a chart to it' },
    });
    const document = documentOf(answer) as typeof summary;
    expect(document.root.component).toBe('Card');
    expect(document.root.children.map((c) => c.component)).toEqual(['Stat', 'BarChart']);
    expect(check(document)).toMatchObject({ ok: true });
  });

  it('edits the app it built into a next version with the column asked for', async () => {
    const answer = await ask([...built, user('add the notes to it')]);
    expect(answer).toMatchObject({
      tool: 'service_make',
      input: { appId: 'app_1', wish: 'add the notes to it' },
    });
    const document = documentOf(answer);
    expect(check(document)).toMatchObject({ ok: true });
    expect(JSON.stringify(document)).toContain('{"field":"note","label":"Note"}');
    const reworded = await ask([...built, user('edit it to show the item names')]);
    expect(JSON.stringify(reworded)).toContain('{"field":"item","label":"Item"}');
  });

  it('adds a bar chart of the orders by status from order_stats', async () => {
    const answer = await ask([...built, user('add a chart to it')]);
    expect(answer).toMatchObject({ tool: 'service_make', input: { appId: 'app_1' } });
    const document = documentOf(answer) as { queries: Record<string, unknown> };
    expect(check(document)).toMatchObject({ ok: true });
    expect(document.queries.stats).toEqual({ tool: 'order_stats' });
    expect(JSON.stringify(document)).toContain('"component":"BarChart"');
  });

  it('asks for a field the host does not return, so the checks refuse it', async () => {
    const answer = await ask([...built, user("add the customer's shoe size")]);
    expect(answer).toMatchObject({ tool: 'service_make', input: { appId: 'app_1' } });
    const document = documentOf(answer);
    const validation = check(document);
    expect(validation.ok).toBe(false);
    expect(JSON.stringify(validation)).toContain('customer_shoe_size');
  });

  it('edits from the last screen that was saved, not from a refused one', async () => {
    const refused = [
      ...built,
      user("add the customer's shoe size"),
      called('c2', 'service_make', {
        wish: 'x',
        appId: 'app_1',
        document: { ...ordersScreen(), title: 'Refused' },
      }),
      answered('c2', 'service_make', { status: 'failed', app: 'My orders', where: 'your apps', note: 'no' }),
      user('add the notes to it'),
    ];
    const answer = await ask(refused);
    expect(JSON.stringify(answer)).toContain('"title":"My orders"');
  });

  it('says the receipt’s note after service_make, and why when it failed', async () => {
    expect(await ask(built.slice(0, 3))).toEqual({ text: 'Done: saved as version 1 of app_1.' });
    const failed = await ask([
      ...built.slice(0, 2),
      answered('c1', 'service_make', {
        status: 'failed',
        app: 'My orders',
        where: 'your apps',
        note: 'refused, nothing saved: no shoe size',
      }),
    ]);
    expect(failed).toEqual({ text: 'I could not change the screen: refused, nothing saved: no shoe size' });
  });

  it('still lists orders and echoes as before', async () => {
    expect(await ask([user('What are my orders?')])).toEqual({ tool: 'list_orders', input: {} });
    expect(await ask([user('hello')])).toMatchObject({ text: expect.stringContaining('You said: hello.') });
  });
});

describe('the demo model replays a wish for a rebase', () => {
  const applyWish = {
    tools: [
      {
        type: 'function' as const,
        name: 'apply_wish',
        inputSchema: { type: 'object' as const, properties: { document: { type: 'object' as const } } },
      },
    ],
  };
  // As the service's replayer asks: the Kit in the system message, document and wish in the user's.
  const replay = (wish: string): LanguageModelV3Prompt => [
    { role: 'system', content: 'You update an app document. The Kit: {"components":[]}' },
    user(`The app document now:\n${JSON.stringify(ordersScreen())}\n\nThe person's wish: ${wish}`),
  ];

  it('applies a wish it knows to the document in the prompt with apply_wish', async () => {
    const answer = await ask(replay('add the notes to it'), applyWish);
    expect(answer).toMatchObject({ tool: 'apply_wish' });
    const document = documentOf(answer);
    expect(check(document)).toMatchObject({ ok: true });
    expect(JSON.stringify(document)).toContain('"field":"note"');
    const chart = documentOf(await ask(replay('add a chart'), applyWish));
    expect(check(chart)).toMatchObject({ ok: true });
    expect(JSON.stringify(chart)).toContain('"component":"BarChart"');
  });

  it('answers no tool call for a wish it does not know', async () => {
    expect(await ask(replay('make it purple'), applyWish)).toMatchObject({ text: expect.any(String) });
  });
});

describe('the demo model writes the input of the apps building tools as a provider streams it', () => {
  /** The stream's parts, reduced to their types, with the deltas counted as one `tool-input-delta*`. */
  const shape = (parts: LanguageModelV3StreamPart[]) =>
    parts
      .map((part) => part.type)
      .filter((type, i, types) => type !== 'tool-input-delta' || types[i - 1] !== 'tool-input-delta')
      .map((type) => (type === 'tool-input-delta' ? 'tool-input-delta*' : type));

  it('starts the input, writes its JSON in chunks, ends it, then calls the tool with the whole input', async () => {
    const parts = await partsOf([user('make a screen of my orders')]);
    expect(shape(parts)).toEqual([
      'stream-start',
      'tool-input-start',
      'tool-input-delta*',
      'tool-input-end',
      'tool-call',
      'finish',
    ]);
    const start = parts.find((p) => p.type === 'tool-input-start');
    const call = parts.find((p) => p.type === 'tool-call');
    if (start?.type !== 'tool-input-start' || call?.type !== 'tool-call') throw new Error('no call');
    expect(start.toolName).toBe('service_make');
    expect(call.toolName).toBe('service_make');
    const deltas = parts.flatMap((p) => (p.type === 'tool-input-delta' ? [p] : []));
    expect(deltas.length).toBeGreaterThan(2);
    for (const delta of deltas) {
      expect(delta.id).toBe(start.id);
      expect(delta.delta.length).toBeLessThanOrEqual(INPUT_CHUNK_CHARS);
    }
    expect(parts.find((p) => p.type === 'tool-input-end')).toEqual({ type: 'tool-input-end', id: start.id });
    expect(call.toolCallId).toBe(start.id);
    // The deltas are the call's input, which parses to the scripted document.
    const written = deltas.map((d) => d.delta).join('');
    expect(written).toBe(call.input);
    expect(JSON.parse(written)).toEqual({ wish: 'make a screen of my orders', document: ordersScreen() });
  });

  it('writes the app an edit changes before its document', async () => {
    const parts = await partsOf([...built, user('add the notes to it')]);
    const written = parts.map((p) => (p.type === 'tool-input-delta' ? p.delta : '')).join('');
    expect(JSON.parse(written)).toMatchObject({ appId: 'app_1', wish: 'add the notes to it' });
    expect(written.indexOf('"appId":"app_1"')).toBeGreaterThan(-1);
    expect(written.indexOf('"appId"')).toBeLessThan(written.indexOf('"document"'));
  });

  it('calls the other tools whole, in one tool-call', async () => {
    for (const prompt of [[user('What are my orders?')], [...built, user('pin it to orders.side')]]) {
      expect(shape(await partsOf(prompt))).toEqual(['stream-start', 'tool-call', 'finish']);
    }
    const replay = await partsOf(
      [user(`The app document now:\n${JSON.stringify(ordersScreen())}\n\nThe person's wish: add a chart`)],
      { tools: [{ type: 'function', name: 'apply_wish', inputSchema: { type: 'object' } }] },
    );
    expect(shape(replay)).toEqual(['stream-start', 'tool-call', 'finish']);
  });

  it('paces the chunks, and stops between them when the call is aborted, with the abort’s reason', async () => {
    const controller = new AbortController();
    const { stream } = await createDemoModel().doStream({
      prompt: [user('make a screen of my orders')],
      abortSignal: controller.signal,
    });
    const reader = stream.getReader();
    const seen: string[] = [];
    const firstAt = Date.now();
    let deltaAt = 0;
    for (;;) {
      const { value } = await reader.read();
      seen.push(value!.type);
      if (value!.type === 'tool-input-delta') {
        deltaAt = Date.now();
        break;
      }
    }
    // The first chunk waited its turn, as the rest do: a person sees the input grow.
    expect(deltaAt - firstAt).toBeGreaterThanOrEqual(INPUT_CHUNK_DELAY_MS - 10);
    const reason = new Error('stopped');
    const next = reader.read();
    const abortedAt = Date.now();
    controller.abort(reason);
    await expect(next).rejects.toBe(reason);
    // Promptly: the pause ends with the abort, not after the chunk's delay.
    expect(Date.now() - abortedAt).toBeLessThan(INPUT_CHUNK_DELAY_MS / 2);
    expect(seen).not.toContain('tool-call');
  });
});
