/**
 * An offline stand-in for a real model, so the demo host drives whole turns with no network and
 * no API key: it lists orders when asked about orders ("orders"), cancels one when asked to
 * ("cancel order A-1001", which parks for approval), tells a story slowly when a message says
 * "story" (about 150 words, one every 30 ms, so a Stop button can be seen to work; it stops when
 * the call is aborted, as a provider does), reports what a tool returned, and otherwise echoes.
 *
 * It also builds apps (`src/demo-model-apps.ts`): "make a screen of my orders" calls
 * `service_make`, "pin it to orders.side" / "put it on my orders page" pins it, "add the notes to
 * it" or "add a chart to it" edits it (its next version), "add the customer's shoe size" asks for a field the host does not
 * return (the build is refused), and a rebase replay (`apply_wish`) applies the same edits. After
 * `service_make` it says the receipt's note.
 *
 * Swap in any AI SDK provider model (`openai('gpt-4o-mini')`) for real conversations.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
// No extension: the Next.js example compiles this module from source, and its bundler does not
// map `.js` to `.ts` outside the app.
import { appsReply } from './demo-model-apps';

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 0, text: 0, reasoning: undefined },
};

export function createDemoModel(): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId: 'demo-offline',
    supportedUrls: {},
    doGenerate: async () => {
      throw new Error('The demo model only streams.');
    },
    doStream: async (options) => ({ stream: streamOf(reply(options), options.abortSignal) }),
  };
}

type Reply = { text: string; wordDelayMs?: number } | { tool: string; input: Record<string, unknown> };

/** How slowly the story streams: slow enough to stop halfway. */
const STORY_WORD_DELAY_MS = 30;

/** 150 words, streamed one at a time. */
const STORY = Array.from(
  { length: 10 },
  (_, i) =>
    `Chapter ${i + 1}: the espresso machine hummed, the grinder sang, and the order book turned slowly.`,
).join(' ');

function reply(options: LanguageModelV3CallOptions): Reply {
  const scripted = appsReply(options);
  if (scripted) return scripted;
  const last = options.prompt.at(-1);
  if (last?.role === 'tool') {
    const result = last.content.find((part) => part.type === 'tool-result');
    const output =
      result?.type === 'tool-result'
        ? JSON.stringify('value' in result.output ? result.output.value : result.output)
        : 'nothing';
    return { text: `Done. The tool answered: ${output.slice(0, 400)}` };
  }
  const said =
    last?.role === 'user' ? last.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ') : '';
  if (/\bstory\b/i.test(said)) return { text: STORY, wordDelayMs: STORY_WORD_DELAY_MS };
  const cancel = /cancel\s+order\s+([A-Za-z0-9-]+)/i.exec(said);
  if (cancel) return { tool: 'cancel_order', input: { orderId: cancel[1]!.toUpperCase() } };
  if (/\border/i.test(said)) return { tool: 'list_orders', input: {} };
  return {
    text: `You said: ${said.trim() || '(nothing)'}. Ask me about your orders, or to cancel order A-1001.`,
  };
}

function streamOf(answer: Reply, abortSignal?: AbortSignal): ReadableStream<LanguageModelV3StreamPart> {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  if ('text' in answer) {
    parts.push({ type: 'text-start', id: 't' });
    for (const word of answer.text.split(/(?<= )/)) parts.push({ type: 'text-delta', id: 't', delta: word });
    parts.push({ type: 'text-end', id: 't' });
  } else {
    parts.push({
      type: 'tool-call',
      toolCallId: `call_${Date.now()}`,
      toolName: answer.tool,
      input: JSON.stringify(answer.input),
    });
  }
  parts.push({
    type: 'finish',
    finishReason: { unified: 'text' in answer ? 'stop' : 'tool-calls', raw: undefined },
    usage,
  });
  const delayMs = 'wordDelayMs' in answer ? (answer.wordDelayMs ?? 0) : 0;
  if (delayMs === 0) {
    return new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    });
  }
  // Paced: one part per pull after a pause; an abort ends the stream with its reason, as a
  // provider's aborted fetch does.
  let next = 0;
  return new ReadableStream({
    async pull(controller) {
      if (abortSignal?.aborted) {
        controller.error(abortSignal.reason);
        return;
      }
      const part = parts[next++];
      if (!part) {
        controller.close();
        return;
      }
      if (part.type === 'text-delta') await pause(delayMs, abortSignal);
      if (abortSignal?.aborted) controller.error(abortSignal.reason);
      else controller.enqueue(part);
    },
  });
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
