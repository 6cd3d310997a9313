/**
 * An offline stand-in for a real model, so the demo host drives whole turns with no network and
 * no API key: it lists orders when asked about orders ("orders"), cancels one when asked to
 * ("cancel order A-1001", which parks for approval), tells a story slowly when a message says
 * "story" (about 150 words, one every 30 ms, so a Stop button can be seen to work; it stops when
 * the call is aborted, as a provider does), reports what a tool returned, and otherwise echoes.
 *
 * It also builds apps (`src/demo-model-apps.ts`): "make a screen of my orders" calls
 * `service_make`, "pin it to orders.side" / "put it on my orders page" pins it, "add the notes to
 * it" or "add a chart to it" edits it (its next version), "add the customer's shoe size" asks for
 * a field the host does not return (the build is refused), and a rebase replay (`apply_wish`)
 * applies the same edits. After `service_make` it says the receipt's note.
 *
 * The input of the apps building tools (`service_make`, `service_apps_create`,
 * `service_apps_edit`) is written as a provider writes it: `tool-input-start`, the JSON in chunks
 * of 120 characters 90 ms apart (`appId` before `document`), `tool-input-end`, then the whole
 * `tool-call`; so the chat shows the app's tree growing while the service previews it, and an
 * abort stops it between chunks. Other tools are called whole, in one `tool-call`.
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

/** The tools whose input the service paints as it is written (the app in the chat). */
const STREAMED_INPUT_TOOLS = new Set(['service_make', 'service_apps_create', 'service_apps_edit']);
/** How much of such an input each delta carries, and how long apart: slow enough to see it grow. */
export const INPUT_CHUNK_CHARS = 120;
export const INPUT_CHUNK_DELAY_MS = 90;

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
    parts.push(...toolCallParts(answer.tool, answer.input));
  }
  parts.push({
    type: 'finish',
    finishReason: { unified: 'text' in answer ? 'stop' : 'tool-calls', raw: undefined },
    usage,
  });
  const delayOf = (part: LanguageModelV3StreamPart): number => {
    if (part.type === 'text-delta') return 'wordDelayMs' in answer ? (answer.wordDelayMs ?? 0) : 0;
    return part.type === 'tool-input-delta' ? INPUT_CHUNK_DELAY_MS : 0;
  };
  if (!parts.some((part) => delayOf(part) > 0)) {
    return new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    });
  }
  // Paced: one part per pull, a delta after a pause; an abort ends the stream with its reason, as
  // a provider's aborted fetch does.
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
      const delayMs = delayOf(part);
      if (delayMs > 0) await pause(delayMs, abortSignal);
      if (abortSignal?.aborted) controller.error(abortSignal.reason);
      else controller.enqueue(part);
    },
  });
}

/**
 * The parts calling `tool` with `input`: for an apps building tool its input written in chunks
 * first, as a provider streams it; for any other tool one whole `tool-call`.
 */
function toolCallParts(tool: string, input: Record<string, unknown>): LanguageModelV3StreamPart[] {
  const toolCallId = `call_${Date.now()}`;
  const json = JSON.stringify(inWritingOrder(input));
  const call: LanguageModelV3StreamPart = { type: 'tool-call', toolCallId, toolName: tool, input: json };
  if (!STREAMED_INPUT_TOOLS.has(tool)) return [call];
  const parts: LanguageModelV3StreamPart[] = [{ type: 'tool-input-start', id: toolCallId, toolName: tool }];
  for (let at = 0; at < json.length; at += INPUT_CHUNK_CHARS)
    parts.push({ type: 'tool-input-delta', id: toolCallId, delta: json.slice(at, at + INPUT_CHUNK_CHARS) });
  parts.push({ type: 'tool-input-end', id: toolCallId }, call);
  return parts;
}

/**
 * `input` with its `document` written last: the app it edits (`appId`) and the other short
 * fields come first, so the service knows which app a preview paints before the tree arrives.
 */
function inWritingOrder(input: Record<string, unknown>): Record<string, unknown> {
  if (!('document' in input)) return input;
  const { document, ...rest } = input;
  return { ...rest, document };
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
